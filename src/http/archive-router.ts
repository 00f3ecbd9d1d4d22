import express, { type Response, type Router } from "express";
import { z } from "zod";
import { eventsMatching, outcomes } from "../archive/archive-queries.js";
import { forgetEntity } from "../archive/forget-entity.js";
import type { RunningArchive } from "../archive/start-archive.js";
import { windowProblem } from "../archive/window-problem.js";
import type { Logger } from "../logging/logger.js";
import { parseTimeInput, timeInputForms } from "../time/parse-time-input.js";
import { sendErrorProblem, sendProblem } from "./problem.js";

/**
 * A filter's time, as search and replay take it: the forms a person types in the CLI and in
 * the operator view alike (parse-time-input.ts), durations counted back from the request's
 * arrival; read as an ISO 8601 string. Postgres has no year 0, and no arrival is older than
 * 1970: a time before is a typo, said as one.
 */
export const time = z
  .string({ error: `must be ${timeInputForms}` })
  .transform((value, context) => {
    const at = parseTimeInput(value, Date.now());
    if (at !== undefined) return new Date(at).toISOString();
    context.addIssue({ code: "custom", message: `must be ${timeInputForms}` });
    return z.NEVER;
  })
  .refine((text) => Date.parse(text) >= 0, "must be a time from 1970 on, e.g. 2026-11-25T06:35:17Z");
/** An event type, or a pattern such as user.*. */
export const typePattern = z.string().regex(/^(\*|[A-Za-z0-9_.-]+(\.\*)?)$/, "must be an event type or a pattern such as user.*");
/** No route name holds a NUL (routes are checked at start): one in a route is the caller's mistake (400). */
export const nul = "must not hold a NUL character (\\u0000): no route name does";
export const nulFree = (text: string) => !text.includes("\0");
/** A name or id the archive is searched by: any text, a NUL or a lone surrogate included (archive-text.ts encodes them). */
export const archiveText = z.string().min(1, "must not be empty");
/** An outcome on a route, as search and replay take it. */
export const outcome = z.enum(outcomes, { error: `must be one of ${outcomes.join(", ")}` });
const searchQuery = z.strictObject({
  id: archiveText.optional(),
  type: typePattern.optional(),
  entity: archiveText.optional(),
  stream: archiveText.optional(),
  since: time.optional(),
  until: time.optional(),
  route: archiveText.refine(nulFree, nul).optional(),
  outcome: outcome.optional(),
  limit: z.coerce.number({ error: "must be a whole number from 1 to 1000" }).int("must be a whole number from 1 to 1000").min(1, "must be a whole number from 1 to 1000").max(1000, "must be a whole number from 1 to 1000").default(50),
  after: archiveText.optional(),
});

/** The first problem of a zod parse, as one line that names the field. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const field = issue.path.join(".") || "body";
  return issue.code === "unrecognized_keys" ? `unknown parameter ${issue.keys.join(", ")}` : `${field}: ${issue.message}`;
}

/**
 * Postgres did not answer: the archive is unavailable, nothing the caller should change.
 * Unless Postgres refused a value itself (a data exception, SQLSTATE class 22): that is
 * the request's, a 400, never an outage with a Retry-After (the checks above should have
 * caught it first).
 */
export function sendArchiveUnavailable(res: Response, logger: Logger, error: unknown): void {
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && code.startsWith("22")) {
    return sendProblem(res, 400, `a parameter holds a value the archive cannot take: ${(error as Error).message}; check the times, ids and names given`);
  }
  logger.warn({ err: error }, "archive request failed: Postgres did not answer");
  sendProblem(res, 503, "the archive is unavailable right now (Postgres does not answer); events are kept in the outbox meanwhile. Retry later", { "Retry-After": "2" });
}

/**
 * Search and erasure (README.md#the-archive-search-timelines-replay-erasure): `GET /admin/events` in
 * keyset pages, newest first, and `DELETE /admin/entities/:id`.
 */
export function createArchiveRouter(deps: { archive: RunningArchive; logger: Logger; forgetJobs(entity: string): Promise<number> }): Router {
  const { archive, logger } = deps;
  const router = express.Router();

  router.get("/events", async (req, res) => {
    const parsed = searchQuery.safeParse(req.query);
    if (!parsed.success) return sendProblem(res, 400, firstIssue(parsed.error));
    const { limit, after, since, until, ...filter } = parsed.data;
    const empty = since && until ? windowProblem(Date.parse(since), Date.parse(until)) : undefined;
    if (empty) return sendProblem(res, 400, empty);
    try {
      res.json(await eventsMatching(archive.pool, { ...filter, since: since ? Date.parse(since) : undefined, until: until ? Date.parse(until) : undefined }, limit, after));
    } catch (error) {
      if (sendErrorProblem(res, error)) return;
      sendArchiveUnavailable(res, logger, error);
    }
  });

  router.delete("/entities/:entityId", async (req, res) => {
    const entity = req.params.entityId as string;
    try {
      const { erased } = await forgetEntity(archive.pool, entity);
      const jobs = await deps.forgetJobs(entity);
      logger.info({ erased, jobs }, "erasure: an entity's archived payloads were erased, and its kept delivery jobs removed");
      res.json({ entity, erased, jobs });
    } catch (error) {
      sendArchiveUnavailable(res, logger, error);
    }
  });
  return router;
}

import express, { type Response, type Router } from "express";
import { z } from "zod";
import { eventsMatching, forgetEntity, outcomes } from "../archive/archive-queries.js";
import type { RunningArchive } from "../archive/start-archive.js";
import type { Logger } from "../logger.js";
import { parseTimeInput, timeInputForms } from "../parse-time-input.js";
import { sendErrorProblem, sendProblem } from "./problem.js";

/**
 * A filter's time, as search and replay take it: the forms a person types in the CLI and in
 * the operator view alike (parse-time-input.ts), durations counted back from the request's
 * arrival; read as an ISO 8601 string.
 */
export const time = z.string({ error: `must be ${timeInputForms}` }).transform((value, context) => {
  const at = parseTimeInput(value, Date.now());
  if (at !== undefined) return new Date(at).toISOString();
  context.addIssue({ code: "custom", message: `must be ${timeInputForms}` });
  return z.NEVER;
});
/** An event type, or a pattern such as user.*. */
export const typePattern = z.string().regex(/^(\*|[A-Za-z0-9_.-]+(\.\*)?)$/, "must be an event type or a pattern such as user.*");
/** PostgreSQL text holds no NUL: one in a name or id is the caller's mistake (400), not an outage. */
export const nul = "must not hold a NUL character (\\u0000): no id, entity, stream or route name does";
export const nulFree = (text: string) => !text.includes("\0");
/** A name or id the archive is searched by. */
export const archiveText = z.string().min(1, "must not be empty").refine(nulFree, nul);
const searchQuery = z.strictObject({
  id: archiveText.optional(),
  type: typePattern.optional(),
  entity: archiveText.optional(),
  stream: archiveText.optional(),
  since: time.optional(),
  until: time.optional(),
  route: archiveText.optional(),
  outcome: z.enum(outcomes, { error: `must be one of ${outcomes.join(", ")}` }).optional(),
  limit: z.coerce.number({ error: "must be a whole number from 1 to 1000" }).int("must be a whole number from 1 to 1000").min(1, "must be a whole number from 1 to 1000").max(1000, "must be a whole number from 1 to 1000").default(50),
  after: archiveText.optional(),
});

/** The first problem of a zod parse, as one line that names the field. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const field = issue.path.join(".");
  return issue.code === "unrecognized_keys" ? `unknown parameter ${issue.keys.join(", ")}` : `${field}: ${issue.message}`;
}

/** Postgres did not answer: the archive is unavailable, nothing the caller should change. */
export function sendArchiveUnavailable(res: Response, logger: Logger, error: unknown): void {
  logger.warn({ err: error }, "archive request failed: Postgres did not answer");
  sendProblem(res, 503, "the archive is unavailable right now (Postgres does not answer); events are kept in the outbox meanwhile. Retry later", { "Retry-After": "2" });
}

/**
 * Search and erasure (README.md#the-archive-search-timelines-replay-erasure): `GET /admin/events` in
 * keyset pages, newest first, and `DELETE /admin/entities/:id`.
 */
export function createArchiveRouter(deps: { archive: RunningArchive; logger: Logger }): Router {
  const { archive, logger } = deps;
  const router = express.Router();

  router.get("/events", async (req, res) => {
    const parsed = searchQuery.safeParse(req.query);
    if (!parsed.success) return sendProblem(res, 400, firstIssue(parsed.error));
    const { limit, after, since, until, ...filter } = parsed.data;
    if (since && until && Date.parse(until) <= Date.parse(since)) return sendProblem(res, 400, "until must be after since");
    try {
      res.json(await eventsMatching(archive.pool, { ...filter, since: since ? Date.parse(since) : undefined, until: until ? Date.parse(until) : undefined }, limit, after));
    } catch (error) {
      if (sendErrorProblem(res, error)) return;
      sendArchiveUnavailable(res, logger, error);
    }
  });

  router.delete("/entities/:entityId", async (req, res) => {
    const entity = req.params.entityId as string;
    if (!nulFree(entity)) return sendProblem(res, 400, `entity ${nul}`);
    try {
      const erased = await forgetEntity(archive.pool, entity);
      logger.info({ erased }, "erasure: an entity's archived payloads were erased");
      res.json({ entity, erased });
    } catch (error) {
      sendArchiveUnavailable(res, logger, error);
    }
  });
  return router;
}

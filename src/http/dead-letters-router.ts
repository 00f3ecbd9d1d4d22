import express, { type Router } from "express";
import { z } from "zod";
import { pageDeadLetters } from "../admin/page-dead-letters.js";
import { replayDeadLetters, type Replayed } from "../admin/replay-dead-letters.js";
import type { DeliveryQueues } from "../queue/delivery-queues.js";
import { sendProblem } from "./problem.js";

/** A page holds at most this many dead letters; `limit` asks for fewer. */
export const maxDeadLettersPerPage = 500;

const listQuery = z.object({
  limit: z.coerce.number("must be a number").int("must be a whole number").min(1, "must be at least 1").max(maxDeadLettersPerPage, `must be at most ${maxDeadLettersPerPage}`).default(maxDeadLettersPerPage),
  after: z.string().optional(),
});

const replayBody = z.union([
  z.strictObject({ all: z.literal(true, "must be true") }),
  z.strictObject({ jobIds: z.array(z.string().min(1, "must be non-empty job ids"), "must be an array of job ids").min(1, "give at least one job id") }),
]);

/**
 * `GET /admin/dead-letters?limit=&after=` → `{"deadLetters":[...],"next"?}` and
 * `POST /admin/dead-letters/replay` `{"jobIds":[...]}` or `{"all":true}` → `{"replayed":n,"jobs"}`,
 * behind ADMIN_TOKEN: what `streamkeeper dead-letters` and the operator page use, so both
 * see the running service's routes and Redis, never a shell's.
 */
export function createDeadLettersRouter(queues: () => DeliveryQueues): Router {
  const router = express.Router();

  router.get("/dead-letters", async (req, res) => {
    const query = listQuery.safeParse(req.query);
    if (!query.success) {
      const issue = query.error.issues[0]!;
      return sendProblem(res, 400, `${issue.path.join(".")}: ${issue.message}`);
    }
    // A bad cursor carries its 400 to the admin app's error handler.
    res.json(await pageDeadLetters(queues(), query.data));
  });

  router.post("/dead-letters/replay", async (req, res) => {
    const parsed = replayBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendProblem(res, 400, 'send {"jobIds":["<route>/<job-id>" or "<job-id>", ...]} or {"all":true}');
    const jobs: Replayed[] = [];
    try {
      const result = await replayDeadLetters(queues(), "all" in parsed.data ? { all: true } : { ids: parsed.data.jobIds }, (replayed) => jobs.push(replayed));
      if (result.unknown.length > 0) {
        return sendProblem(res, 404, `no dead letter with job id ${result.unknown.join(", ")}; nothing was replayed (see GET /admin/dead-letters)`);
      }
      res.json({ replayed: result.replayed, jobs });
    } catch {
      // Redis failed half-way: what was replayed stays replayed; say how much, and to run it again.
      sendProblem(res, 503, `Redis failed during the replay after ${jobs.length} dead letter(s) were replayed; the rest were not: replay again once Redis answers`, { "Retry-After": "1" });
    }
  });

  return router;
}

import express, { type Router } from "express";
import { z } from "zod";
import type { ReconcileQueue } from "../reconcile/create-reconcile-queue.js";
import { sendProblem } from "./problem.js";
import { streamIdField } from "./stream-id-field.js";

/** One request may queue this many ids; a longer list goes in several requests (or `streamkeeper reconcile --file`). */
export const maxIdsPerRequest = 10_000;

const requestBody = z.strictObject({
  eventIds: z
    .array(z.string().trim().min(1, "must be a non-empty event id").max(256, "must be at most 256 characters"), "must be an array of event ids")
    .min(1, "give at least one event id")
    .max(maxIdsPerRequest, `at most ${maxIdsPerRequest} ids per request; split the list into several requests`),
  streamId: streamIdField.optional(),
  force: z.boolean("must be true or false").default(false),
});

const outcomesBody = z.strictObject({ jobIds: z.array(z.string().min(1)).min(1).max(maxIdsPerRequest) });

/**
 * `POST /admin/reconcile` and `GET /admin/reconcile/:jobId` (README.md#http-surfaces),
 * mounted by the admin app behind ADMIN_TOKEN, with its JSON parser.
 */
export function createReconcileRouter(reconcile: ReconcileQueue): Router {
  const router = express.Router();

  router.post("/reconcile", async (req, res) => {
    if (req.body === undefined) {
      return sendProblem(res, 400, 'send a JSON body {"eventIds":[...],"streamId"?,"force"?} with Content-Type: application/json');
    }
    const parsed = requestBody.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join(".");
      const what = issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}; the fields are eventIds, streamId, force` : `${field || "body"}: ${issue.message}`;
      return sendProblem(res, 400, what);
    }
    const { eventIds, streamId, force } = parsed.data;
    const jobs = await reconcile.enqueue([...new Set(eventIds)], { streamId, force });
    // `workers`: 0 says the jobs wait for a worker role to start (a command says so).
    res.status(202).json({ jobs, workers: await reconcile.queue.getWorkersCount() });
  });

  // Many jobs' outcomes in one call (a command waiting on a long list of ids).
  router.post("/reconcile/outcomes", async (req, res) => {
    const parsed = outcomesBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendProblem(res, 400, `send {"jobIds":[...]} with 1 to ${maxIdsPerRequest} job ids from POST /admin/reconcile`);
    const jobs = await Promise.all(
      parsed.data.jobIds.map(async (jobId) => {
        const job = await reconcile.outcomeOf(jobId);
        return { jobId, state: job?.state ?? "unknown", outcome: job?.result?.outcome ?? null, ...(job?.result ? { result: job.result } : {}), ...(job?.retrying ? { retrying: job.retrying } : {}) };
      }),
    );
    res.json({ jobs });
  });

  router.get("/reconcile/:jobId", async (req, res) => {
    const jobId = req.params.jobId as string;
    const job = await reconcile.outcomeOf(jobId);
    if (!job) return sendProblem(res, 404, `no reconcile job ${jobId} (finished jobs are kept 7 days); check the jobId from POST /admin/reconcile`);
    res.json({ state: job.state, outcome: job.result?.outcome ?? null, ...(job.result ? { result: job.result } : {}), ...(job.retrying ? { retrying: job.retrying } : {}) });
  });

  return router;
}

import express, { type Router } from "express";
import { z } from "zod";
import type { Replays } from "../archive/replays.js";
import type { Logger } from "../logging/logger.js";
import { archiveText, firstIssue, nul, nulFree, outcome, sendArchiveUnavailable, time, typePattern } from "./archive-router.js";
import { sendErrorProblem, sendProblem } from "./problem.js";

const replayBody = z.strictObject({
  route: z.string({ error: "give the route to replay to" }).min(1, "give the route to replay to").refine(nulFree, nul),
  since: time,
  until: time.optional(),
  type: typePattern.optional(),
  entity: archiveText.optional(),
  stream: archiveText.optional(),
  outcome: outcome.optional(),
  rate: z.number({ error: "must be a number of events per second above 0" }).positive("must be a number of events per second above 0").optional(),
  dryRun: z.boolean({ error: "must be true or false" }).default(false),
});

/**
 * `POST /admin/replays`, `GET /admin/replays` (every replay, newest first), `GET /admin/replays/:id`, `DELETE /admin/replays/:id`
 * (README.md#the-archive-search-timelines-replay-erasure); replay-runner.ts sends what they start.
 */
export function createReplayRouter(deps: { replays: Replays; logger: Logger; started(): void }): Router {
  const { replays, logger } = deps;
  const router = express.Router();

  router.post("/replays", async (req, res) => {
    const parsed = replayBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendProblem(res, 400, firstIssue(parsed.error));
    const { since, until, ...rest } = parsed.data;
    try {
      const started = await replays.start({ ...rest, since: Date.parse(since), until: until === undefined ? undefined : Date.parse(until) });
      if (started.dryRun) return res.json({ matched: started.matched, erased: started.erased, dryRun: true });
      logger.info({ replayId: started.replayId, route: rest.route, matched: started.matched }, "replay started");
      deps.started();
      res.status(202).json({ replayId: started.replayId, matched: started.matched, erased: started.erased });
    } catch (error) {
      if (sendErrorProblem(res, error)) return;
      sendArchiveUnavailable(res, logger, error);
    }
  });

  router.get("/replays", async (_req, res) => {
    try {
      res.json({ replays: await replays.list() });
    } catch (error) {
      sendArchiveUnavailable(res, logger, error);
    }
  });

  router.get("/replays/:replayId", async (req, res) => {
    try {
      const status = await replays.get(req.params.replayId as string);
      if (!status) return sendProblem(res, 404, `no replay ${req.params.replayId}; POST /admin/replays answers with the id of the one it starts`);
      res.json(status);
    } catch (error) {
      sendArchiveUnavailable(res, logger, error);
    }
  });

  router.delete("/replays/:replayId", async (req, res) => {
    try {
      if (!(await replays.cancel(req.params.replayId as string))) {
        const status = await replays.get(req.params.replayId as string);
        if (!status) return sendProblem(res, 404, `no replay ${req.params.replayId}`);
        return sendProblem(res, 409, `replay ${req.params.replayId} is ${status.state} already; only a running replay can be cancelled`);
      }
      logger.info({ replayId: req.params.replayId }, "replay cancelled");
      res.json(await replays.get(req.params.replayId as string));
    } catch (error) {
      sendArchiveUnavailable(res, logger, error);
    }
  });
  return router;
}

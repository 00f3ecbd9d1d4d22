import express, { type Router } from "express";
import type { PullStatus } from "../pull/pull-state.js";
import { sendProblem } from "./problem.js";

/**
 * `GET /admin/pull?poison=<n>` (README.md#pulling-events-pull-on): where the pull stands,
 * as the holding worker published it in Redis, so any process of the service answers, with
 * the `n` newest poison events kept aside (10 by default, at most 1000).
 */
export function createPullRouter(describe: (poisonShown: number) => Promise<PullStatus>): Router {
  const router = express.Router();
  router.get("/pull", async (req, res) => {
    const asked = req.query.poison;
    const poisonShown = asked === undefined ? 10 : Number(asked);
    if (!Number.isInteger(poisonShown) || poisonShown < 0 || poisonShown > 1000) {
      return sendProblem(res, 400, `poison must be a whole number from 0 to 1000 (how many of the newest poison events to show), not ${JSON.stringify(asked)}`);
    }
    let status: PullStatus;
    try {
      status = await describe(poisonShown);
    } catch (error) {
      return sendProblem(res, 503, `cannot read the pull's state from Redis (${(error as Error).message}); try again when Redis is back`);
    }
    res.json(status);
  });
  return router;
}

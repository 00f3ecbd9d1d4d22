import express, { type Router } from "express";
import type { PullStatus } from "../pull/pull-state.js";
import { sendProblem } from "./problem.js";

/**
 * `GET /admin/pull` (README.md#pulling-events-pull-on): where the pull stands,
 * as the holding worker published it in Redis, so any process of the service answers.
 */
export function createPullRouter(describe: () => Promise<PullStatus>): Router {
  const router = express.Router();
  router.get("/pull", async (_req, res) => {
    let status: PullStatus;
    try {
      status = await describe();
    } catch (error) {
      return sendProblem(res, 503, `cannot read the pull's state from Redis (${(error as Error).message}); try again when Redis is back`);
    }
    res.json(status);
  });
  return router;
}

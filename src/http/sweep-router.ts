import express, { type Router } from "express";
import { z } from "zod";
import type { StreamSweepStatus } from "../sweep/create-sweep-state.js";
import type { WindowRunner } from "../sweep/create-window-runner.js";
import { sendProblem } from "./problem.js";
import { streamIdField } from "./stream-id-field.js";

const time = z.iso.datetime({ offset: true, error: "must be a time in ISO 8601, e.g. 2025-09-08T06:35:17Z" });
const windowBody = z.strictObject({
  since: time,
  until: time.optional(),
  streams: z.array(streamIdField).optional(),
  type: z.string().regex(/^(\*|[a-z0-9_.]+(\.\*)?)$/, "must be an event type or a pattern such as user.*").optional(),
  dryRun: z.boolean("must be true or false").default(false),
});

export interface SweepRouterDeps {
  describe(): Promise<StreamSweepStatus[]>;
  runWindow: WindowRunner;
}

/**
 * `GET /admin/sweep` (README.md#the-sweep-failed-deliveries-found-without-being-told) and `POST /admin/sweep/window`, the service
 * side of `streamkeeper reconcile --since`: the window is read with the service's own tenant
 * settings and routes. The answer is NDJSON, one line per failed delivery as it is handled
 * (a long window shows progress and no proxy times out), then `{"done":true,...}`, or
 * `{"error":...}` when the window could not be read to its end.
 */
export function createSweepRouter(deps: SweepRouterDeps): Router {
  const router = express.Router();

  router.get("/sweep", async (_req, res) => {
    res.json({ streams: await deps.describe() });
  });

  router.post("/sweep/window", async (req, res) => {
    const parsed = windowBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const what = issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}; the fields are since, until, streams, type, dryRun` : `${issue.path.join(".") || "body"}: ${issue.message}`;
      return sendProblem(res, 400, what);
    }
    const { since, until, streams, type, dryRun } = parsed.data;
    const from = new Date(since);
    const to = until === undefined ? new Date() : new Date(until);
    if (from >= to) return sendProblem(res, 400, `since (${since}) must be before until (${to.toISOString()})`);
    let started = false;
    const line = (value: unknown) => {
      if (!started) res.status(200).type("application/x-ndjson");
      started = true;
      res.write(`${JSON.stringify(value)}\n`);
    };
    try {
      const done = await deps.runWindow({ from, to, streamIds: streams, type, dryRun }, (result) => line(result));
      line({ done: true, from: from.toISOString(), to: to.toISOString(), ...done });
      res.end();
    } catch (error) {
      if (started) {
        line({ error: error instanceof Error ? error.message : String(error) });
        return void res.end();
      }
      // Not started: a refused or unavailable window, or the tenant's answer, carries its status to the admin app's error handler.
      throw error;
    }
  });

  return router;
}

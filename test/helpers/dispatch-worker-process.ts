/**
 * A dispatcher in its own process, for crash tests: `node --import tsx
 * test/helpers/dispatch-worker-process.ts '<json>'` with the JSON of
 * `DispatchWorkerProcessOptions`. It prints `ready` once the workers run and closes
 * gracefully on SIGTERM. (Stands in for `streamkeeper start --role worker`, which takes
 * its settings from the environment and has no short-lock option.)
 */
import { createDispatcher } from "../../src/dispatch/create-dispatcher.js";
import type { Route } from "../../src/dispatch/route.js";
import { createLogger } from "../../src/logger.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createRedis, untilReady } from "../../src/queue/redis-connection.js";

export interface DispatchWorkerProcessOptions {
  redisUrl: string;
  queuePrefix: string;
  routes: Route[];
  lockDurationMs: number;
  stalledIntervalMs: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as DispatchWorkerProcessOptions;
const redis = createRedis(options.redisUrl, "worker", "dispatch-worker-process");
await untilReady(redis);
const dispatcher = createDispatcher({
  ...options,
  ledger: createEventLedger(redis, options.queuePrefix, 600),
  logger: createLogger("warn"),
  backoffBaseMs: 20,
  backoffMaxMs: 1000,
  shutdownTimeoutMs: 2000,
});
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  void dispatcher.close().then(() => {
    redis.disconnect();
    process.exit(0);
  });
});

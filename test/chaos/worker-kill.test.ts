import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { inspectStore } from "../helpers/inspect-store.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { startTestService } from "../helpers/start-test-service.js";
import { startChaosSink, type ChaosSink } from "./chaos-sink.js";
import { recordChaosResult } from "./record-chaos-result.js";
import { routeFigures } from "./route-figures.js";
import { startLoadDriver } from "./start-load-driver.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";

const concurrency = 4;
const kills = 2;

/**
 * Scenario 2 (docs/reliability.md): the worker process (`start --role worker`) is
 * SIGKILLed while it delivers, twice, and started again each time; the receiver keeps
 * taking webhooks in this process. A delivery in flight at a kill stays locked to the
 * dead worker until DISPATCH_LOCK_DURATION_MS passes, then the new worker sends it again
 * with the same webhook-id: the only repeats there may be.
 */
describe("chaos: worker process killed during delivery", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the worker is SIGKILLed mid-delivery and restarted, twice, then every event answered 202 reaches every route, repeating only deliveries in flight at a kill", async () => {
    const started = Date.now();
    const dir = await mkdtemp(join(tmpdir(), "sk-chaos-worker-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const sinks: Record<string, ChaosSink> = {};
    for (const route of ["a", "b"]) {
      // Each delivery takes 100 ms at the downstream, so a kill always finds some in flight.
      sinks[route] = await startChaosSink(() => ({ status: 200, delayMs: 100 }));
      cleanup.push(() => sinks[route]!.close());
    }
    const routesFile = join(dir, "routes.json");
    await writeFile(routesFile, JSON.stringify(Object.entries(sinks).map(([name, sink]) => ({ name, match: "*", url: sink.url, concurrency }))));
    const receiver = await startTestService({ ROUTES_FILE: routesFile }, "receiver");
    cleanup.push(() => receiver.close());
    const workerEnv = serviceProcessEnv({
      QUEUE_PREFIX: receiver.config.env.QUEUE_PREFIX,
      ROUTES_FILE: routesFile,
      DATA_DIR: dir,
      // A short lock: the next worker takes orphaned jobs over within about 6 s. Not the
      // shortest (1 s): a live worker stalled past its lock on this loaded machine would send a
      // job again that no kill orphaned.
      DISPATCH_LOCK_DURATION_MS: "3000",
      DISPATCH_BACKOFF_BASE_MS: "50",
      SHUTDOWN_TIMEOUT_MS: "2000",
    });
    const store = await inspectStore(receiver.config);
    cleanup.push(() => store.close());
    let worker: ServiceProcess = await startServiceProcess("worker", workerEnv);
    cleanup.push(() => worker.kill());

    const driver = await startLoadDriver({ url: `${receiver.publicUrl}/webhooks`, authorization, ratePerSecond: 25, durationMs: 16_000 });
    cleanup.push(async () => driver.kill());
    const inFlightAtKills: Record<string, number> = { a: 0, b: 0 };
    for (let kill = 0; kill < kills; kill++) {
      // Kill while both routes are busy: deliveries are held open at the downstream.
      const before = Object.fromEntries(Object.entries(sinks).map(([name, sink]) => [name, sink.sink.requests.length]));
      await Promise.all(Object.entries(sinks).map(([name, sink]) => sink.sink.untilReceived(before[name]! + 20, 60_000)));
      await worker.kill();
      // The dead worker's jobs are still active (locked) in Redis: these are the deliveries in flight.
      const orphans = await Promise.all(Object.keys(sinks).map(async (name) => [name, await store.queues.forRoute(name).getActive()] as const));
      for (const [name, jobs] of orphans) inFlightAtKills[name]! += jobs.length;
      worker = await startServiceProcess("worker", workerEnv);
      // Before the next kill, let the new worker finish the orphans: BullMQ fails a job that
      // stalls more than maxStalledCount times (create-dispatcher.ts), which would make it a dead letter.
      const deadline = Date.now() + 60_000;
      for (const [, jobs] of orphans) {
        for (const job of jobs) {
          while ((await job.getState()) !== "completed") {
            expect(Date.now(), `job ${job.id} not taken over after the kill`).toBeLessThan(deadline);
            await new Promise((ok) => setTimeout(ok, 100));
          }
        }
      }
    }
    const load = await driver.finished;

    expect(load.refused, "answers other than 202/503 to valid events").toEqual([]);
    const acknowledged = new Set(load.acknowledged);
    await Promise.all(Object.values(sinks).map((sink) => sink.untilAccepted(acknowledged, 120_000)));
    const routes = Object.entries(sinks).map(([name, sink]) => routeFigures(name, sink, acknowledged, concurrency * kills));
    const deadLetters = await Promise.all(Object.keys(sinks).map((name) => store.queues.forRoute(name).getFailedCount()));
    await recordChaosResult("worker-kill", {
      fault: `worker process SIGKILLed during delivery and restarted, ${kills} times`,
      acknowledged: acknowledged.size,
      events: load.events,
      answers503: load.answers["503"] ?? 0,
      kills,
      inFlightAtKills,
      deadLetters: deadLetters.reduce((sum, count) => sum + count, 0),
      routes,
      durationMs: Date.now() - started,
    });
    expect(deadLetters).toEqual([0, 0]);
    for (const route of routes) {
      expect(route.lost, `route ${route.route}`).toBe(0);
      expect(route.repeats, `route ${route.route}`).toBeLessThanOrEqual(Math.min(route.repeatBound, inFlightAtKills[route.route]!));
    }
  }, 300_000);
});

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { startChaosSink, type ChaosSink } from "./chaos-sink.js";
import { recordChaosResult } from "./record-chaos-result.js";
import { routeFigures } from "./route-figures.js";
import { startLoadDriver, type LoadDriver } from "./start-load-driver.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";

const concurrency = 4;

/**
 * Scenario 1 (docs/reliability.md): the Redis process dies (SIGKILL) in the middle of
 * ingest and comes back on the same port from its append-only file. What the receiver
 * answered 202 was written to the AOF before the answer, so a process kill loses none of it.
 * With `appendfsync always`: under everysec, Redis postpones its AOF writes while a background
 * fsync runs and still replies, and a kill then loses acknowledged writes (measured: 5 kills in
 * 120; docs/reliability.md, "What Redis can lose"). This proves the service's part alone.
 */
describe("chaos: Redis killed during ingest", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when Redis is SIGKILLed and restarted from its append-only file under load, then every event answered 202 reaches every route, and events refused meanwhile are retried by the tenant and answered 202 at a retry", async () => {
    const started = Date.now();
    const dir = await mkdtemp(join(tmpdir(), "sk-chaos-redis-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    let redis: RedisServer = await startRedisServer({ dir, appendOnly: true, extraArgs: ["--appendfsync", "always"] });
    cleanup.push(() => redis.stop());
    const sinks: Record<string, ChaosSink> = {};
    for (const route of ["a", "b"]) {
      // A short hold keeps deliveries in flight when Redis dies.
      sinks[route] = await startChaosSink(() => ({ status: 200, delayMs: 20 }));
      cleanup.push(() => sinks[route]!.close());
    }
    const routesFile = join(dir, "routes.json");
    await writeFile(routesFile, JSON.stringify(Object.entries(sinks).map(([name, sink]) => ({ name, match: "*", url: sink.url, concurrency }))));
    const service: TestService = await startTestService({
      REDIS_URL: redis.url,
      ROUTES_FILE: routesFile,
      DISPATCH_LOCK_DURATION_MS: "2000",
      DISPATCH_BACKOFF_BASE_MS: "100",
      DISPATCH_BACKOFF_MAX_MS: "2000",
    });
    cleanup.push(() => service.close());

    const driver: LoadDriver = await startLoadDriver({ url: `${service.publicUrl}/webhooks`, authorization, ratePerSecond: 40, durationMs: 12_000 });
    cleanup.push(async () => driver.kill());
    await driver.until((progress) => progress.acknowledged >= 80, 60_000);
    await redis.kill();
    const port = redis.port;
    // Down until the tenant has seen it (a 503 or an unanswered request), then back.
    await driver.until((progress) => progress.unavailable >= 1, 30_000);
    redis = await startRedisServer({ dir, port, appendOnly: true, extraArgs: ["--appendfsync", "always"] });
    const load = await driver.finished;

    expect(load.refused, "answers other than 202/503 to valid events").toEqual([]);
    const acknowledged = new Set(load.acknowledged);
    await Promise.all(Object.values(sinks).map((sink) => sink.untilAccepted(acknowledged, 120_000)));

    const routes = Object.entries(sinks).map(([name, sink]) => routeFigures(name, sink, acknowledged, concurrency * 1));
    await recordChaosResult("redis-kill", {
      fault: "Redis SIGKILLed during ingest, restarted from its AOF on the same port",
      acknowledged: acknowledged.size,
      events: load.events,
      answers503: load.answers["503"] ?? 0,
      unanswered: load.answers["0"] ?? 0,
      retriedEvents: load.retried,
      acknowledgedOnRetry: load.acknowledgedOnRetry,
      gaveUpAfter4Attempts: load.gaveUp.length,
      kills: 1,
      routes,
      durationMs: Date.now() - started,
    });
    expect((load.answers["503"] ?? 0) + (load.answers["0"] ?? 0), "the kill was seen by the tenant").toBeGreaterThan(0);
    // The refusals were worth retrying: some events the kill refused were taken at a later attempt.
    expect(load.retried, "events the tenant sent again").toBeGreaterThan(0);
    expect(load.acknowledgedOnRetry, `events answered 202 at a retry (of ${load.retried} retried, ${load.gaveUp.length} given up)`).toBeGreaterThan(0);
    for (const route of routes) {
      expect(route.lost, `route ${route.route}`).toBe(0);
      expect(route.repeats, `route ${route.route}`).toBeLessThanOrEqual(route.repeatBound);
    }
  }, 240_000);
});

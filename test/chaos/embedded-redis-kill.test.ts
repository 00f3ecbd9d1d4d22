import { readFile, rm } from "node:fs/promises";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { startChaosSink } from "./chaos-sink.js";
import { recordChaosResult } from "./record-chaos-result.js";
import { routeFigures } from "./route-figures.js";
import { startLoadDriver } from "./start-load-driver.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";

const concurrency = 4;

/**
 * The default `npm start` set-up (no REDIS_URL: the embedded redis-server under DATA_DIR)
 * with its redis-server SIGKILLed under load: the service process restarts it from its
 * append-only file, the tenant's retries (4 attempts, 1/2/4 s) carry the requests answered
 * 503 meanwhile, and every event answered 202 reaches the route.
 */
describe("chaos: the embedded Redis killed under load", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the embedded redis-server is SIGKILLed while webhooks arrive at 20/s, then it is restarted, and nothing acknowledged is lost", async () => {
    const started = Date.now();
    const dataDir = await mkdtemp(join(tmpdir(), "sk-chaos-embedded-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const sink = await startChaosSink(() => ({ status: 200, delayMs: 10 }));
    cleanup.push(() => sink.close());
    const env = serviceProcessEnv({ DOWNSTREAM_URL: sink.url, DATA_DIR: dataDir, LOG_LEVEL: "info", DISPATCH_LOCK_DURATION_MS: "2000", DISPATCH_BACKOFF_BASE_MS: "100", DISPATCH_BACKOFF_MAX_MS: "2000" });
    delete (env as Record<string, string | undefined>).REDIS_URL;
    const service = await startServiceProcess("all", env);
    cleanup.push(() => service.stop());
    // Last resort: a redis-server left behind by a failed test.
    cleanup.push(async () => {
      const pid = Number((await readFile(join(dataDir, "redis", "redis.pid"), "utf8").catch(() => "")).trim());
      if (pid > 0) process.kill(pid, "SIGKILL");
    });

    const driver = await startLoadDriver({ url: `${service.publicUrl}/webhooks`, authorization, ratePerSecond: 20, durationMs: 12_000 });
    cleanup.push(async () => driver.kill());
    await driver.until((progress) => progress.acknowledged >= 60, 60_000);
    const killed = Number((await readFile(join(dataDir, "redis", "redis.pid"), "utf8")).trim());
    process.kill(killed, "SIGKILL");
    const load = await driver.finished;

    expect(load.refused, "answers other than 202/503 to valid events").toEqual([]);
    const acknowledged = new Set(load.acknowledged);
    await sink.untilAccepted(acknowledged, 120_000);
    const route = routeFigures("default", sink, acknowledged, concurrency);
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    const restarts = Number(/^streamkeeper_embedded_redis_restarts_total (\d+)/m.exec(metrics)?.[1] ?? 0);
    await recordChaosResult("embedded-redis-kill", {
      fault: "embedded redis-server SIGKILLed during ingest at 20 events/s; restarted by the service from its AOF",
      acknowledged: acknowledged.size,
      events: load.events,
      answers503: load.answers["503"] ?? 0,
      unanswered: load.answers["0"] ?? 0,
      retriedEvents: load.retried,
      gaveUpAfter4Attempts: load.gaveUp.length,
      restarts,
      routes: [route],
      durationMs: Date.now() - started,
    });
    expect(restarts).toBe(1);
    expect(service.output()).toContain("the embedded redis-server had died; restarted it from its append-only file");
    expect(route.lost).toBe(0);
    expect((await fetch(`${service.adminUrl}/healthz`)).status).toBe(200);
  }, 240_000);
});

import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

/** One sample's value from Prometheus text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((row) => row.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(service: TestService): Promise<string> {
  const res = await fetch(`${service.adminUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

describe("operate: metrics", () => {
  const cleanup = useCleanup("all");

  it("when events wait in two route queues, then /metrics reports jobs per queue (and the reconcile queue) and state and the backlog age, and the public port has no /metrics", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-operate-"));
    const routesFile = join(dir, "routes.yaml");
    // Nothing listens on port 9; the receiver role has no dispatcher, so the jobs wait.
    await writeFile(routesFile, "routes:\n  - { name: users, match: user.*, url: http://127.0.0.1:9/ }\n  - { name: all, match: '*', url: http://127.0.0.1:9/ }\n");
    const service = await startTestService({ ROUTES_FILE: routesFile }, "receiver");
    cleanup.push(() => service.close());

    const before = Date.now();
    for (let i = 0; i < 3; i++) expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    expect((await service.post("/webhooks", JSON.stringify(userEvent({ type: "group.created" })))).status).toBe(202);

    const text = await scrape(service);
    expect(sample(text, 'streamkeeper_queue_jobs{queue="deliver-users",state="waiting"}')).toBe(3);
    expect(sample(text, 'streamkeeper_queue_jobs{queue="deliver-all",state="waiting"}')).toBe(4);
    for (const state of ["prioritized", "delayed", "active", "completed", "failed"]) {
      expect(sample(text, `streamkeeper_queue_jobs{queue="deliver-users",state="${state}"}`)).toBe(0);
    }
    expect(sample(text, 'streamkeeper_queue_jobs{queue="reconcile",state="waiting"}')).toBe(0);
    const age = sample(text, 'streamkeeper_queue_oldest_waiting_age_seconds{queue="deliver-all"}')!;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThanOrEqual((Date.now() - before) / 1000 + 0.01);
    expect(sample(text, "streamkeeper_redis_up")).toBe(1);
    expect(sample(text, 'streamkeeper_events_received_total{type="user.updated",origin="webhook"}')).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'streamkeeper_webhook_requests_total{status="202"}')).toBeGreaterThanOrEqual(4);
    expect(text).toContain("streamkeeper_process_cpu_seconds_total");

    const publicMetrics = await fetch(`${service.publicUrl}/metrics`);
    expect(publicMetrics.status).toBe(404);
    expect(await publicMetrics.text()).not.toContain("streamkeeper_");
  });

  it("when the oldest job has waited a while, then the backlog age grows with it", async () => {
    const service = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/" }, "receiver");
    cleanup.push(() => service.close());
    const posted = Date.now();
    expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    const age = async () => sample(await scrape(service), 'streamkeeper_queue_oldest_waiting_age_seconds{queue="deliver-default"}')!;
    const first = await age();
    // Scrape until the age has grown by 0.3 s (it is read afresh each time; no fixed sleep).
    let later = first;
    const deadline = Date.now() + 5000;
    while (later < first + 0.3 && Date.now() < deadline) later = await age();
    expect(later).toBeGreaterThanOrEqual(first + 0.3);
    expect(later).toBeLessThanOrEqual((Date.now() - posted) / 1000 + 0.01);
  });

  it("when Redis is gone, then /metrics still answers while it is down, scrape after scrape, with redis_up 0 and no stale queue counts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-operate-redis-"));
    const redis = await startRedisServer({ dir, appendOnly: false });
    // Its own route name: the other tests' services share this process's metrics registry.
    const routesFile = join(dir, "routes.yaml");
    await writeFile(routesFile, "- { name: fault, match: '*', url: http://127.0.0.1:9/ }\n");
    const service = await startTestService({ REDIS_URL: redis.url, ROUTES_FILE: routesFile }, "receiver");
    cleanup.push(() => service.close());
    expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    expect(sample(await scrape(service), 'streamkeeper_queue_jobs{queue="deliver-fault",state="waiting"}')).toBe(1);

    await redis.kill();
    // Never a hang: each scrape is answered while Redis stays down (it is never started
    // again), the Redis client's command timeout bounding it; order, not the clock.
    for (let scrapes = 0; scrapes < 3; scrapes++) {
      const text = await scrape(service);
      expect(sample(text, "streamkeeper_redis_up")).toBe(0);
      expect(text).not.toContain('streamkeeper_queue_jobs{queue="deliver-fault"');
    }
  });
});

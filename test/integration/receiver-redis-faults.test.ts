import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRedisServer, type RedisServer } from "../../src/queue/redis-server.js";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

const sink = { DOWNSTREAM_URL: "http://127.0.0.1:9/" };

/** Posts until the answer is `status`, within `deadlineMs`; returns the answers seen. */
async function postUntil(service: TestService, status: number, deadlineMs: number) {
  const seen: Array<{ id: string; status: number }> = [];
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const event = userEvent();
    const res = await service.post("/webhooks", JSON.stringify(event));
    seen.push({ id: event.id, status: res.status });
    if (res.status === status) return seen;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`no ${status} within ${deadlineMs} ms: ${JSON.stringify(seen.slice(-3))}`);
}

describe("receiver: Redis faults", () => {
  const cleanup = useCleanup("all");

  it("when Redis is killed mid-run, then requests get 503 with Retry-After quickly, and 202 again once it is back, with nothing acknowledged lost", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-fault-"));
    let redis: RedisServer = await startRedisServer({ dir, appendOnly: true });
    const port = redis.port;
    cleanup.push(() => redis.stop());
    const service = await startTestService({ ...sink, REDIS_URL: redis.url }, "receiver");
    cleanup.push(() => service.close());

    const acknowledged: string[] = [];
    for (let i = 0; i < 20; i++) {
      const event = userEvent();
      expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
      acknowledged.push(event.id);
    }

    await redis.kill();
    const started = Date.now();
    const res = await service.post("/webhooks", JSON.stringify(userEvent()));
    const elapsed = Date.now() - started;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(((await res.json()) as { detail: string }).detail).toMatch(/could not be stored/);
    // Bounded by the 1.5 s store timeout, never a hang; the rest of the margin is for a
    // loaded machine (wall-clock time measured from the test, not the service's own).
    expect(elapsed).toBeLessThan(5000);
    // The public /readyz answer may be up to 1 s old (README.md#http-surfaces).
    await expect.poll(async () => (await fetch(`${service.publicUrl}/readyz`)).status).toBe(503);

    redis = await startRedisServer({ dir, port, appendOnly: true });
    const after = await postUntil(service, 202, 15_000);
    for (const answer of after) if (answer.status === 202) acknowledged.push(answer.id);
    expect(after.every((answer) => answer.status === 202 || answer.status === 503)).toBe(true);
    // The public /readyz answer may be up to 1 s old (README.md#http-surfaces).
    await expect.poll(async () => (await fetch(`${service.publicUrl}/readyz`)).status).toBe(200);

    const store = await inspectStore(service.config, redis.url);
    cleanup.push(() => store.close());
    const queued = await store.queuedIds();
    for (const id of acknowledged) expect(queued).toContain(id);
  });

  it("when the embedded Redis is stopped with the service and started again, then an event stored before is still known", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-embedded-"));
    const env = { ...sink, REDIS_URL: "", DATA_DIR: dataDir, QUEUE_PREFIX: "embedded" };
    const event = userEvent();
    const first = await startTestService(env, "receiver");
    expect((await first.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await first.close(); // stops the redis-server it started

    const second = await startTestService(env, "receiver");
    cleanup.push(() => second.close());
    const again = await second.post("/webhooks", JSON.stringify(event));
    expect(await again.json()).toEqual({ accepted: 0, duplicates: 1 });
    const store = await inspectStore(second.config, `redis+unix://${join(dataDir, "redis", "redis.sock")}`);
    cleanup.push(() => store.close());
    expect(await store.queuedIds()).toContain(event.id);
  });
});

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
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

  it("when Redis is killed mid-run, then each request is answered 503 with Retry-After while it is still down (none waits for it), and 202 again once it is back, with nothing acknowledged lost", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-fault-"));
    // Every write on disk before Redis replies: with everysec, a busy disk lets Redis put off
    // its write for up to 2 s while it already answers, and the SIGKILL below would take
    // acknowledged events with it (docs/reliability.md, "What Redis can lose"). This test is
    // about the receiver, not about that setting.
    const durable = { appendOnly: true, extraArgs: ["--appendfsync", "always"] };
    let redis: RedisServer = await startRedisServer({ dir, ...durable });
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
    // Never a hang: three requests in a row are each answered while Redis stays down (it is
    // started again only below), the store's timeout bounding each; order, not the clock.
    for (let request = 0; request < 3; request++) {
      const res = await service.post("/webhooks", JSON.stringify(userEvent()));
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(((await res.json()) as { detail: string }).detail).toMatch(/could not be stored/);
    }
    // The public /readyz answer may be up to 1 s old (README.md#http-surfaces).
    await expect.poll(async () => (await fetch(`${service.publicUrl}/readyz`)).status).toBe(503);

    redis = await startRedisServer({ dir, port, ...durable });
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

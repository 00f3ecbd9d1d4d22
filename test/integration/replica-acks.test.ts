import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";
import { until } from "../helpers/until.js";

const sink = { DOWNSTREAM_URL: "http://127.0.0.1:9/" };

/** Polls INFO until `check` holds, failing after a generous deadline. */
async function untilInfo(redis: RedisClient, check: (info: string) => boolean, what: string, timeoutMs = 20_000) {
  let info = "";
  await until(what, async () => check((info = await redis.info("replication"))), { withinMs: timeoutMs, everyMs: 50, detail: () => info });
}

describe("REDIS_MIN_REPLICAS: a 202 only once replicas hold the write", () => {
  let primary: RedisServer;
  let replica: RedisServer;
  let admin: RedisClient;
  const cleanup = useCleanup("all");

  beforeAll(async () => {
    // A replica's first full sync starts at once: Redis 7 otherwise waits 5 s
    // (repl-diskless-sync-delay) for more replicas to share the transfer, before each
    // replica here goes online.
    primary = await startRedisServer({ dir: await mkdtemp(join(tmpdir(), "sk-primary-")), appendOnly: false, extraArgs: ["--repl-diskless-sync-delay", "0"] });
    cleanup.push(() => primary.stop());
    replica = await startRedisServer({ dir: await mkdtemp(join(tmpdir(), "sk-replica-")), appendOnly: false, extraArgs: ["--replicaof", "127.0.0.1", String(primary.port)] });
    cleanup.push(() => replica.stop());
    admin = createRedis(primary.url, "client");
    cleanup.push(async () => admin.disconnect());
    await untilReady(admin);
    await untilInfo(admin, (info) => /^slave0:.*state=online/m.test(info), "the replica is online");
  });

  it("when one replica is online and REDIS_MIN_REPLICAS=1, then the event is answered 202 and the replica holds it", async () => {
    const service = await startTestService({ ...sink, REDIS_URL: primary.url, REDIS_MIN_REPLICAS: "1" }, "receiver");
    cleanup.push(() => service.close());
    const event = userEvent();
    const res = await service.post("/webhooks", JSON.stringify(event));
    expect(res.status).toBe(202);
    // WAIT returned: the replica already has the ledger entry, no polling needed.
    const onReplica = await inspectStore(service.config, replica.url);
    try {
      expect(await onReplica.ledger.has(event.id)).toBe(true);
    } finally {
      await onReplica.close();
    }
  });

  it("when 20 requests come at once with REDIS_MIN_REPLICAS=1 and one replica, then every one is answered 202 and the replica holds every event", async () => {
    const service = await startTestService({ ...sink, REDIS_URL: primary.url, REDIS_MIN_REPLICAS: "1" }, "receiver");
    cleanup.push(() => service.close());
    const events = Array.from({ length: 20 }, () => userEvent());
    const answers = await Promise.all(events.map((event) => service.post("/webhooks", JSON.stringify(event))));
    expect(answers.map((answer) => answer.status)).toEqual(events.map(() => 202));
    const onReplica = await inspectStore(service.config, replica.url);
    try {
      for (const event of events) expect(await onReplica.ledger.has(event.id)).toBe(true);
    } finally {
      await onReplica.close();
    }
  });

  it("when WAITs are pending for 20 requests (REDIS_MIN_REPLICAS=2, one replica), then /readyz still answers 200, and every request 503", async () => {
    const service = await startTestService({ ...sink, REDIS_URL: primary.url, REDIS_MIN_REPLICAS: "2" }, "receiver");
    cleanup.push(() => service.close());
    const answers = Promise.all(Array.from({ length: 20 }, () => service.post("/webhooks", JSON.stringify(userEvent()))));
    // A WAIT is on the service's connection, blocked for want of the second replica.
    let clients: string[] = [];
    await until(
      "a WAIT pending",
      async () => (clients = String(await admin.client("LIST")).split("\n")).some((line) => / flags=\S*b\S* /.test(line) && / cmd=wait /.test(line)),
      { withinMs: 20_000, everyMs: 10, detail: () => clients.join("\n") },
    );
    const readyz = await fetch(`${service.adminUrl}/readyz`);
    expect(readyz.status).toBe(200);
    expect((await answers).map((answer) => answer.status)).toEqual(Array.from({ length: 20 }, () => 503));
  });

  it("when fewer replicas than REDIS_MIN_REPLICAS acknowledge, then the answer is 503 with Retry-After, and 202 on a retry once they do", async () => {
    const service = await startTestService({ ...sink, REDIS_URL: primary.url, REDIS_MIN_REPLICAS: "2" }, "receiver");
    cleanup.push(() => service.close());
    const event = userEvent();
    const res = await service.post("/webhooks", JSON.stringify(event));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(((await res.json()) as { detail: string }).detail).toMatch(/retry later/);

    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^streamkeeper_replica_acks_missing_total [1-9]/m);

    // The tenant's retry: the event is already stored, so it is a duplicate, and its 202
    // still waits for the replicas.
    const second = await startRedisServer({ dir: await mkdtemp(join(tmpdir(), "sk-replica-")), appendOnly: false, extraArgs: ["--replicaof", "127.0.0.1", String(primary.port)] });
    cleanup.push(() => second.stop());
    await untilInfo(admin, (info) => /^slave1:.*state=online/m.test(info), "the second replica is online");
    const retry = await service.post("/webhooks", JSON.stringify(event));
    expect(retry.status).toBe(202);
    expect(await retry.json()).toEqual({ accepted: 0, duplicates: 1 });
    await second.kill();
  });

  it("when the replica is gone, then REDIS_MIN_REPLICAS=1 answers 503, not 202", async () => {
    const service = await startTestService({ ...sink, REDIS_URL: primary.url, REDIS_MIN_REPLICAS: "1" }, "receiver");
    cleanup.push(() => service.close());
    await replica.kill();
    const res = await service.post("/webhooks", JSON.stringify(userEvent()));
    expect(res.status).toBe(503);
  });
});

import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { bullPrefix, deliveryQueueBullPrefix } from "../../src/queue/queue-names.js";
import { createRedis, parseClusterUrl } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startRedisCluster, type RedisClusterHandle } from "../helpers/redis-cluster.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

describe("REDIS_URL for a Redis Cluster", () => {
  it("when it lists seed nodes with redis+cluster://, then each seed and the credentials are read, TLS with rediss+cluster://", () => {
    expect(parseClusterUrl("redis+cluster://10.0.0.1:7000,10.0.0.2:7001")).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseClusterUrl("rediss+cluster://default:p%40ss%3Aword@clustercfg.example.cache.amazonaws.com")).toEqual({
      nodes: [{ host: "clustercfg.example.cache.amazonaws.com", port: 6379 }],
      username: "default",
      password: "p@ss:word",
      tls: true,
    });
    expect(parseClusterUrl("redis+cluster://:secret@[::1]:7000/")?.nodes).toEqual([{ host: "::1", port: 7000 }]);
    expect(parseClusterUrl("redis://127.0.0.1:6379")).toBeUndefined();
  });

  it("when it is malformed, then the error shows the form to write, without the password", () => {
    expect(() => parseClusterUrl("redis+cluster://user:hunter2@a:1/3?x=1")).toThrow(/write redis\+cluster:\/\/\[user:password@\]host:port/);
    expect(() => parseClusterUrl("redis+cluster://user:hunter2@a:1/3?x=1")).not.toThrow(/hunter2/);
    expect(() => createRedis("redis://:hunter2@a:1,b:2", "client")).toThrow(/for a Redis Cluster write redis\+cluster:\/\/host:port,host:port/);
    expect(() => createRedis("redis://:hunter2@a:1,b:2", "client")).not.toThrow(/hunter2/);
  });

  it("when REDIS_URL has another scheme, then the settings fail naming REDIS_URL and the schemes to use", () => {
    expect(() => loadConfig({ REDIS_URL: "http://redis:6379", WEBHOOK_AUTH: "none" })).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_URL: "http://redis:6379", WEBHOOK_AUTH: "none" })).toThrow(/REDIS_URL: use redis:\/\/host:port, .*redis\+cluster:\/\//);
    expect(loadConfig({ REDIS_URL: "rediss+cluster://a:1,b:2", WEBHOOK_AUTH: "none" }).env.REDIS_URL).toBe("rediss+cluster://a:1,b:2");
  });
});

describe("the receiver on a three-master Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  let service: TestService;
  const acknowledged: string[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    // A prefix whose shared tag and route queue sit on different masters, as most do: the
    // case a command sent to one node for both would break.
    let prefix = `test-${randomUUID()}`;
    while ((await cluster.nodeOf(bullPrefix(prefix))) === (await cluster.nodeOf(deliveryQueueBullPrefix(prefix, "default")))) prefix = `test-${randomUUID()}`;
    service = await startTestService({ REDIS_URL: cluster.url, DOWNSTREAM_URL: "http://127.0.0.1:9/", QUEUE_PREFIX: prefix }, "receiver");
  });

  afterAll(async () => {
    await service?.close();
    await cluster?.stop();
  });

  /** The index of the node that serves the hash slot of the route's queue: every event needs it. */
  async function ownerOfPrefix(): Promise<number> {
    return cluster.nodeOf(deliveryQueueBullPrefix(service.config.env.QUEUE_PREFIX, "default"));
  }

  it("when events arrive, some twice, then each is stored once, the keys spread over the masters and each queue's keys sit in one slot", async () => {
    const events = Array.from({ length: 30 }, () => userEvent());
    for (const event of events) {
      expect(await (await service.post("/webhooks", JSON.stringify(event))).json()).toEqual({ accepted: 1, duplicates: 0 });
      acknowledged.push(event.id);
    }
    for (const event of events.slice(0, 10)) {
      expect(await (await service.post("/webhooks", JSON.stringify(event))).json()).toEqual({ accepted: 0, duplicates: 1 });
    }
    // The public /readyz answer may be up to 1 s old (README.md#http-surfaces).
    await expect.poll(async () => (await fetch(`${service.publicUrl}/readyz`)).status).toBe(200);

    const store = await inspectStore(service.config, cluster.url);
    try {
      const queued = await store.queuedIds();
      expect([...queued].sort()).toEqual(acknowledged.slice().sort());
      expect((await store.ledger.get(events[0]!.id))?.duplicates).toBe(1);
    } finally {
      await store.close();
    }

    // CROSSSLOT can never happen: each route queue, ledger shard and version shard has its
    // own hash tag, which every key a script touches shares; the tags spread over the masters.
    const prefix = service.config.env.QUEUE_PREFIX;
    const queueKeys = deliveryQueueBullPrefix(prefix, "default");
    const owner = await ownerOfPrefix();
    const keysPerNode = await Promise.all(
      cluster.nodes.map(async (node) => {
        const redis = new Redis(node.port, "127.0.0.1", { maxRetriesPerRequest: 1 });
        try {
          return { all: (await redis.keys(`{${prefix}*`)).length, queue: (await redis.keys(`${queueKeys}*`)).length };
        } finally {
          redis.disconnect();
        }
      }),
    );
    expect(keysPerNode[owner]!.queue).toBeGreaterThan(30);
    expect(keysPerNode.filter((count) => count.queue > 0)).toHaveLength(1);
    expect(keysPerNode.filter((count) => count.all > 0).length).toBeGreaterThanOrEqual(2);

    // The queue gauges read queues on different masters in one scrape.
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toContain("streamkeeper_redis_up 1");
    expect(metrics).toMatch(/streamkeeper_queue_jobs\{queue="deliver-default",state="waiting"\} 30\b/);
    expect(metrics).toMatch(/streamkeeper_queue_jobs\{queue="reconcile",state="waiting"\} 0\b/);
  });

  it("when the node serving the route queue's slot dies, then the receiver answers 503 while it is down (no request waits for it), and 202 once the node is back, nothing acknowledged lost", async () => {
    const owner = await ownerOfPrefix();
    await cluster.nodes[owner]!.kill();

    // Fail fast, never hang: two requests in a row are each answered while the node stays
    // down (it is restarted only below), the store's timeout bounding each; order, not the clock.
    for (let request = 0; request < 2; request++) expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(503);
    // The public /readyz answer may be up to 1 s old (README.md#http-surfaces).
    await expect.poll(async () => (await fetch(`${service.publicUrl}/readyz`)).status).toBe(503);

    await cluster.restart(owner);
    // The node rejoins, the cluster re-forms (5 s node timeout) and the client reads its slots again.
    const deadline = Date.now() + 120_000;
    let accepted: string | undefined;
    while (!accepted && Date.now() < deadline) {
      const event = userEvent();
      const answer = await service.post("/webhooks", JSON.stringify(event));
      expect([202, 503]).toContain(answer.status);
      if (answer.status === 202) accepted = event.id;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(accepted, "no 202 within 120 s of the node's restart").toBeDefined();
    acknowledged.push(accepted!);

    const store = await inspectStore(service.config, cluster.url);
    try {
      const queued = await store.queuedIds();
      for (const id of acknowledged) expect(queued).toContain(id);
    } finally {
      await store.close();
    }
  });
});

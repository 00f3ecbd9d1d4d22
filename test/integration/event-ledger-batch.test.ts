import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventLedger, type Arrival } from "../../src/queue/event-ledger.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";

const arrival = (routes: string[]): Arrival => ({ receivedAt: Date.now(), origin: "webhook", streamId: "est_1", type: "user.updated", routes });

/** EVALSHA and EVAL calls Redis has run so far (the ledger's script goes by either). */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  return [...info.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

describe("event ledger batches", () => {
  // A Redis of its own: its command counts are this test's alone.
  let dir: string;
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "ledger-batch-"));
    server = await startRedisServer({ dir, appendOnly: false });
    redis = createRedis(server.url, "client") as Redis;
    await untilReady(redis);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("when 50 ids are claimed, marked and read in one turn each, then each turn is one script call and every id gets its own answer", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 3600);
    await ledger.shards();
    const ids = Array.from({ length: 50 }, () => `evt_${randomUUID()}`);
    const callsOf = async (turn: () => Promise<unknown>) => {
      const before = await scriptCalls(redis);
      await turn();
      return (await scriptCalls(redis)) - before;
    };
    expect(await callsOf(() => Promise.all(ids.map((id) => ledger.claim(id, arrival(["a", "b"]), false))))).toBe(1);
    expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a", "b"]), false)))).toEqual(ids.map(() => false));
    expect(await callsOf(() => Promise.all(ids.map((id, index) => ledger.markDelivered(id, index % 2 ? "a" : "b", 1_000 + index))))).toBe(1);
    const records = await Promise.all(ids.map((id) => ledger.get(id)));
    records.forEach((record, index) => {
      expect(record?.routes).toEqual(["a", "b"]);
      expect(record?.deliveredAt).toEqual({ [index % 2 ? "a" : "b"]: expect.any(Number) });
      expect(record?.duplicates).toBe(1);
    });
    expect(await Promise.all([...ids, `evt_${randomUUID()}`].map((id) => ledger.lookup(id)))).toEqual([...ids.map(() => "arrived"), "absent"]);
  });

  it("when one call of a turn fails in the script, then the others of its batch still land", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 3600);
    await ledger.shards();
    // 256 route names overflow a bucket's route dictionary (255): that claim fails, the rest land.
    const tooMany = Array.from({ length: 256 }, (_, index) => `route-${index}`);
    const ids = Array.from({ length: 5 }, () => `evt_${randomUUID()}`);
    const results = await Promise.allSettled(ids.map((id, index) => ledger.claim(id, arrival(index === 2 ? tooMany : ["a"]), false)));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/more than 255 route names/);
    expect(await Promise.all(ids.map((id) => ledger.has(id)))).toEqual([true, true, false, true, true]);
  });

  it("when a single endpoint enforces slots (a cluster node reached directly, like a slot-checking proxy), then a batch across shards falls back to one per shard, and every call lands", async () => {
    const cluster = await startRedisCluster(1);
    const direct = createRedis(cluster.nodes[0]!.url, "client") as Redis;
    try {
      await untilReady(direct);
      const ledger = createEventLedger(direct, `test-${randomUUID()}`, 3600);
      await ledger.shards();
      const ids = Array.from({ length: 20 }, () => `evt_${randomUUID()}`);
      expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => true));
      expect(await Promise.all(ids.map((id) => ledger.lookup(id)))).toEqual(ids.map(() => "arrived"));
    } finally {
      direct.disconnect();
      await cluster.stop();
    }
  });
});

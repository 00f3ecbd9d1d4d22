import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { archiveOutboxKey } from "../../src/archive/archive-outbox.js";
import { createEventLedger, type Arrival } from "../../src/queue/event-ledger.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";

const arrival = (routes: string[]): Arrival => ({ receivedAt: Date.now(), origin: "webhook", streamId: "est_1", type: "user.updated", routes });

/** A one-node cluster reached directly (it enforces slots, as a slot-checking proxy does), stopped after `use`. */
async function onOneClusterNode(use: (direct: Redis) => Promise<void>): Promise<void> {
  const cluster = await startRedisCluster(1);
  const direct = createRedis(cluster.nodes[0]!.url, "client") as Redis;
  try {
    await untilReady(direct);
    await use(direct);
  } finally {
    direct.disconnect();
    await cluster.stop();
  }
}

/** The commands a Redis refused with CROSSSLOT so far (INFO errorstats). */
async function crossSlotRefusals(redis: Redis): Promise<number> {
  return Number(/^errorstat_CROSSSLOT:count=(\d+)/m.exec(await redis.info("errorstats"))?.[1] ?? 0);
}

/** EVALSHA and EVAL calls Redis has run so far (the ledger's script goes by either). */
async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  return [...info.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** The keys each script call sent while `run` ran, as declared (`numkeys`, then the keys). */
async function declaredKeys(client: Redis | Cluster, run: () => Promise<unknown>): Promise<string[][]> {
  const declared: string[][] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: Parameters<typeof send>[0], ...rest: unknown[]) => {
    if (command.name === "evalsha" || command.name === "eval") declared.push(command.args.slice(2, 2 + Number(command.args[1])).map(String));
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as typeof client.sendCommand;
  try {
    await run();
  } finally {
    client.sendCommand = send;
  }
  return declared;
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
    // On a single Redis the script builds each bucket's dictionary key: a claim is sent its
    // window's 2 buckets (1-hour buckets, a 1-hour TTL), a mark the newest one.
    const claims = await declaredKeys(redis, async () => expect(await callsOf(() => Promise.all(ids.map((id) => ledger.claim(id, arrival(["a", "b"]), false))))).toBe(1));
    expect(claims.map((keys) => keys.length)).toEqual([100]);
    expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a", "b"]), false)))).toEqual(ids.map(() => false));
    const marks = await declaredKeys(redis, async () => expect(await callsOf(() => Promise.all(ids.map((id, index) => ledger.markDelivered(id, index % 2 ? "a" : "b", 1_000 + index))))).toBe(1));
    expect(marks.map((keys) => keys.length)).toEqual([50]);
    expect([...claims, ...marks].flat().filter((key) => key.endsWith(":names"))).toEqual([]);
    const records = await Promise.all(ids.map((id) => ledger.get(id)));
    records.forEach((record, index) => {
      expect(record?.routes).toEqual(["a", "b"]);
      expect(record?.deliveredAt).toEqual({ [index % 2 ? "a" : "b"]: expect.any(Number) });
      expect(record?.duplicates).toBe(1);
    });
    expect(await Promise.all([...ids, `evt_${randomUUID()}`].map((id) => ledger.lookup(id)))).toEqual([...ids.map(() => "arrived"), "absent"]);
  });

  it("when one call of a turn fails in the script, then the others of its batch still land, and the failed one took no room in the dictionary they share", async () => {
    // One shard: every claim writes the same bucket and its route dictionary.
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 3600, 1);
    await ledger.shards();
    // 256 route names overflow a bucket's route dictionary (255): that claim fails, the rest
    // land, each with a route name of its own that must still find room.
    const tooMany = Array.from({ length: 256 }, (_, index) => `route-${index}`);
    const ids = Array.from({ length: 5 }, () => `evt_${randomUUID()}`);
    const results = await Promise.allSettled(ids.map((id, index) => ledger.claim(id, arrival(index === 2 ? tooMany : [`own-${index}`]), false)));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/more than 255 route names/);
    expect(await Promise.all(ids.map((id) => ledger.has(id)))).toEqual([true, true, false, true, true]);

    // Alone in a fresh bucket, the refused claim writes nothing at all: no name of its type or
    // stream is left in a dictionary that nothing would ever expire.
    const fresh = `test-${randomUUID()}`;
    const alone = createEventLedger(redis, fresh, 3600, 1);
    await alone.shards();
    const before = await redis.keys(`*${fresh}*`);
    await expect(alone.claim(`evt_${randomUUID()}`, arrival(tooMany), false)).rejects.toThrow(/more than 255 route names/);
    expect(await redis.keys(`*${fresh}*`)).toEqual(before);
  });

  it("when Redis refuses the ledger for another reason than slots (an ACL without GET or scripts), then each call gets the refusal, and once allowed the ledger reads its shards again and sends a turn as one script call, admissions in one step", async () => {
    const user = `ledger-${randomUUID()}`;
    await redis.call("ACL", "SETUSER", user, "on", ">secret", "~*", "&*", "+@all", "-get", "-evalsha", "-eval");
    const url = new URL(server.url);
    const connection = createRedis(`redis://${user}:secret@${url.host}`, "client") as Redis;
    try {
      await untilReady(connection);
      const ledger = createEventLedger(connection, `test-${randomUUID()}`, 3600);
      await expect(ledger.shards()).rejects.toThrow(/NOPERM/);
      await redis.call("ACL", "SETUSER", user, "+get");
      expect(await ledger.shards()).toBe(1024);
      const ids = Array.from({ length: 20 }, () => `evt_${randomUUID()}`);
      const refused = await Promise.allSettled(ids.map((id) => ledger.claim(id, arrival(["a"]), false)));
      expect(refused.map((result) => (result.status === "rejected" ? String(result.reason) : "claimed"))).toEqual(ids.map(() => expect.stringMatching(/NOPERM/)));
      await expect(ledger.admit("evt_admitted", { ...arrival([]), routes: [] }, [])).rejects.toThrow(/NOPERM/);

      await redis.call("ACL", "SETUSER", user, "+evalsha", "+eval");
      expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => true));
      // Counted once the script is loaded (the claims' turn loaded it: EVALSHA, then EVAL).
      const before = await scriptCalls(redis);
      expect(await Promise.all(ids.map((id) => ledger.lookup(id)))).toEqual(ids.map(() => "arrived"));
      expect((await scriptCalls(redis)) - before).toBe(1);
      await expect(ledger.admit("evt_admitted", { ...arrival([]), routes: [] }, [])).resolves.toBe("stored");
    } finally {
      connection.disconnect();
      await redis.call("ACL", "DELUSER", user);
    }
  });

  it("when the shard count is fixed, then a user that may not write (a read-only ACL, as on a replica) reads it and finds every id", async () => {
    const prefix = `test-${randomUUID()}`;
    const writer = createEventLedger(redis, prefix, 3600, 8);
    const ids = Array.from({ length: 10 }, () => `evt_${randomUUID()}`);
    expect(await Promise.all(ids.map((id) => writer.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => true));
    const user = `reader-${randomUUID()}`;
    await redis.call("ACL", "SETUSER", user, "on", ">secret", "~*", "+@all", "-@write");
    const url = new URL(server.url);
    const connection = createRedis(`redis://${user}:secret@${url.host}`, "client") as Redis;
    try {
      await untilReady(connection);
      const reader = createEventLedger(connection, prefix, 3600);
      expect(await reader.shards()).toBe(8);
      expect(await Promise.all(ids.map((id) => reader.lookup(id)))).toEqual(ids.map(() => "arrived"));
    } finally {
      connection.disconnect();
      await redis.call("ACL", "DELUSER", user);
    }
  });

  it("when a single endpoint enforces slots (a cluster node reached directly, like a slot-checking proxy), then only the first batch across shards is refused: it falls back to one per shard, later turns go per shard from the start, and every call lands", async () => {
    await onOneClusterNode(async (direct) => {
      const ledger = createEventLedger(direct, `test-${randomUUID()}`, 3600);
      await ledger.shards();
      const ids = Array.from({ length: 20 }, () => `evt_${randomUUID()}`);
      expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => true));
      expect(await crossSlotRefusals(direct)).toBe(1);
      expect(await Promise.all(ids.map((id) => ledger.lookup(id)))).toEqual(ids.map(() => "arrived"));
      expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => false));
      expect(await crossSlotRefusals(direct)).toBe(1);
    });
  });

  it("when such an endpoint refuses an admission (its outbox in another slot), then it answers unsupported, is not sent again, and the ledger's turns go per shard from then on", async () => {
    await onOneClusterNode(async (direct) => {
      const prefix = `test-${randomUUID()}`;
      const ledger = createEventLedger(direct, prefix, 3600);
      const outbox = { key: archiveOutboxKey(prefix), fields: ["r", "{}"] };
      const admitted = (id: string) => ledger.admit(id, { ...arrival([]), routes: [] }, [], outbox);
      await expect(admitted("evt_1")).resolves.toBe("unsupported");
      expect(await crossSlotRefusals(direct)).toBe(1);
      await expect(admitted("evt_2")).resolves.toBe("unsupported");
      expect(await crossSlotRefusals(direct)).toBe(1);
      // Nothing was written by the refused admissions.
      expect(await Promise.all(["evt_1", "evt_2"].map((id) => ledger.lookup(id)))).toEqual(["absent", "absent"]);
      expect(await direct.exists(outbox.key)).toBe(0);
      const ids = Array.from({ length: 20 }, () => `evt_${randomUUID()}`);
      expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => true));
      expect(await crossSlotRefusals(direct)).toBe(1);
    });
  });

  it("when such an endpoint refuses a job's completion with its mark (the queue's keys in another slot), then it answers unsupported, marks nothing, and is not sent again", async () => {
    await onOneClusterNode(async (direct) => {
      const prefix = `test-${randomUUID()}`;
      const ledger = createEventLedger(direct, prefix, 3600);
      expect(await ledger.claim("evt_1", arrival(["a"]), false)).toBe(true);
      // moveToFinished's 14 keys, under a tag of their own: refused before the script runs.
      const completion = { keys: Array.from({ length: 14 }, (_, index) => `{queue-elsewhere}:${index}`), args: ["job", Date.now(), "returnvalue", "{}", "completed", 0, "{queue-elsewhere}:", "opts"] };
      await expect(ledger.finishDelivered("evt_1", "a", Date.now(), completion)).resolves.toBe("unsupported");
      expect(await crossSlotRefusals(direct)).toBe(1);
      await expect(ledger.finishDelivered("evt_1", "a", Date.now(), completion)).resolves.toBe("unsupported");
      expect(await crossSlotRefusals(direct)).toBe(1);
      expect(await ledger.deliveredAt("evt_1", "a")).toBeUndefined();
    });
  });

  it("when the ledger runs on a Redis Cluster, then no call is refused for crossing slots: turns go per shard from the first, every key a call's script writes is declared (a slot's migration guards it), and an admission is not sent (the store takes the long way)", async () => {
    // Two masters: a single node announces no address of its own in CLUSTER SLOTS until it has met another.
    const cluster = await startRedisCluster(2);
    const clustered = createRedis(cluster.url, "client") as Cluster;
    const nodes = cluster.nodes.map((node) => createRedis(node.url, "client") as Redis);
    try {
      await untilReady(clustered);
      const prefix = `test-${randomUUID()}`;
      const ledger = createEventLedger(clustered, prefix, 3600);
      const ids = Array.from({ length: 20 }, () => `evt_${randomUUID()}`);
      const markedAt = Date.now() + 1_000;
      const declared = await declaredKeys(clustered, async () => {
        expect(await Promise.all(ids.map((id) => ledger.claim(id, arrival(["a"]), false)))).toEqual(ids.map(() => true));
        await Promise.all(ids.map((id, index) => ledger.markDelivered(id, "a", markedAt + index)));
      });
      // Claims and marks write buckets and their dictionaries: each call (one or a shard's
      // batch of them) names both.
      expect(declared.length).toBeGreaterThan(0);
      for (const keys of declared) {
        const buckets = keys.filter((key) => !key.endsWith(":names"));
        expect(buckets.length).toBeGreaterThan(0);
        expect(keys.filter((key) => key.endsWith(":names"))).toEqual(buckets.map((key) => `${key}:names`));
      }
      // A lookup reads no dictionary: it is sent the buckets alone.
      const lookups = await declaredKeys(clustered, async () => expect(await Promise.all(ids.map((id) => ledger.lookup(id)))).toEqual(ids.map(() => "arrived")));
      expect(lookups.flat().filter((key) => key.endsWith(":names"))).toEqual([]);
      expect(await Promise.all(ids.map(async (id) => (await ledger.get(id))?.deliveredAt))).toEqual(ids.map((_, index) => ({ a: markedAt + index })));
      await expect(ledger.admit("evt_admitted", { ...arrival([]), routes: [] }, [], { key: archiveOutboxKey(prefix), fields: ["r", "{}"] })).resolves.toBe("unsupported");
      expect(await ledger.lookup("evt_admitted")).toBe("absent");
      // Nor a job's completion with its mark: the worker marks and completes apart there.
      await expect(ledger.finishDelivered(ids[0]!, "b", Date.now(), { keys: [], args: [] })).resolves.toBe("unsupported");
      expect((await ledger.get(ids[0]!))?.deliveredAt).toEqual({ a: markedAt });
      expect(await Promise.all(nodes.map((node) => crossSlotRefusals(node)))).toEqual(nodes.map(() => 0));
    } finally {
      clustered.disconnect();
      for (const node of nodes) node.disconnect();
      await cluster.stop();
    }
  });
});

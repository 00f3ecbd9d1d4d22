import { createHash, randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, inject, vi } from "vitest";
import { createEventLedger, type Arrival, type EventLedger } from "../../src/queue/event-ledger.js";
import { ledgerBucketKey } from "../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { ledgerKeys } from "../helpers/ledger-keys.js";

const arrival = (routes: string[], receivedAt = Date.now()): Arrival => ({ receivedAt, origin: "webhook", streamId: "est_1", type: "user.updated", routes });

/** Claims the id for route `default` a day ago, so its record is in yesterday's bucket; returns that time. */
async function claimYesterday(ledger: EventLedger, id: string): Promise<number> {
  const yesterday = Date.now() - 86_400_000;
  vi.useFakeTimers({ toFake: ["Date"], now: yesterday });
  try {
    await ledger.claim(id, arrival(["default"], yesterday), false);
  } finally {
    vi.useRealTimers();
  }
  return yesterday;
}


describe("compact event ledger", () => {
  const redis = createRedis(inject("redisUrl"), "client") as Redis;
  const ttl = 600;
  beforeAll(() => untilReady(redis));
  afterAll(() => redis.disconnect());

  it("when 20,000 delivered events are recorded, then the ledger holds at most 48 bytes per event, in compact hashes", async () => {
    const prefix = `test-${randomUUID()}`;
    // The fill on a connection without the client's 1.5 s command timeout: 500 calls in one
    // script call, answered while a loaded machine builds the next, can take longer, and
    // what is measured here is the bytes, not the time.
    const filler = createRedis(inject("redisUrl"), "worker") as Redis;
    // ~80 ids per shard, as LEDGER_SHARDS advises for this many a day (fewer ids per shard only adds key overhead).
    const ledger = createEventLedger(filler, prefix, 604_800, 256);
    const events = 20_000;
    try {
      for (let index = 0; index < events; index += 500) {
        await Promise.all(
          Array.from({ length: 500 }, async () => {
            const id = `evt_${randomUUID()}`;
            await ledger.claim(id, arrival(["default"]), false);
            await ledger.markDelivered(id, "default", Date.now());
          }),
        );
      }
    } finally {
      filler.disconnect();
    }
    const keys = await ledgerKeys(redis, prefix);
    let bytes = 0;
    for (const key of keys) {
      bytes += Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
      expect(await redis.object("ENCODING", key)).toBe("listpack");
    }
    expect(bytes / events).toBeLessThanOrEqual(48);
  });

  it("when its buckets hold other ids and other routes, then a record still answers arrival, routes in order, deliveries and stale skips", async () => {
    const prefix = `test-${randomUUID()}`;
    const ledger = createEventLedger(redis, prefix, ttl, 1);
    const receivedAt = Date.now();
    await ledger.claim("evt_other", arrival(["zeta", "alpha"]), false);
    await ledger.claim("evt_1", { ...arrival(["users", "all", "guarded"], receivedAt), origin: "reconcile" }, false);
    await ledger.markDelivered("evt_1", "all", receivedAt + 1234);
    await ledger.markStale("evt_1", "guarded", receivedAt + 99_000);
    // A later configuration with other route names writes into the same bucket.
    await ledger.claim("evt_2", arrival(["renamed"], receivedAt), false);
    await ledger.markDelivered("evt_2", "renamed", receivedAt);

    expect(await ledger.get("evt_1")).toEqual({
      eventId: "evt_1",
      receivedAt,
      origin: "reconcile",
      streamId: "est_1",
      type: "user.updated",
      routes: ["users", "all", "guarded"],
      duplicates: 0,
      lastDuplicateAt: undefined,
      replays: 0,
      deliveredAt: { all: receivedAt + 1234 },
      staleAt: { guarded: receivedAt + 99_000 },
      filtered: [],
    });
    expect(await ledger.deliveredAt("evt_1", "all")).toBe(receivedAt + 1234);
    expect(await ledger.deliveredAt("evt_1", "users")).toBeUndefined();
    expect(await ledger.deliveredAt("evt_1", "renamed")).toBeUndefined();
    expect((await ledger.get("evt_2"))?.deliveredAt).toEqual({ renamed: receivedAt });
  });

  it("when an event's record is in an older bucket than the newest, then its delivered mark lands on that record (a mark tries the newest bucket first)", async () => {
    const prefix = `test-${randomUUID()}`;
    const ledger = createEventLedger(redis, prefix, 604_800, 1);
    const yesterday = await claimYesterday(ledger, "evt_old");
    const at = Date.now();
    await ledger.markDelivered("evt_old", "default", at);
    expect(await ledger.lookup("evt_old")).toBe("arrived");
    expect(await ledger.get("evt_old")).toMatchObject({ receivedAt: yesterday, routes: ["default"], deliveredAt: { default: at } });
    // And an id with no record at all still gets one (delivered_only) in the newest bucket.
    await ledger.markDelivered("evt_none", "default", at);
    expect(await ledger.lookup("evt_none")).toBe("delivered_only");
    expect(await ledger.deliveredAt("evt_none", "default")).toBe(at);
  });

  it("when marks are gathered, then none leaves before its time, and flush sends them and waits for each whole, a record in an older bucket's second step included, before the connection quits", async () => {
    const prefix = `test-${randomUUID()}`;
    const own = createRedis(inject("redisUrl"), "worker") as Redis;
    const ledger = createEventLedger(own, prefix, 604_800, 1, { gatherMarksMs: 60_000 });
    const reader = createEventLedger(redis, prefix, 604_800, 1);
    await claimYesterday(ledger, "evt_old");
    await ledger.claim("evt_new", arrival(["default"]), false);
    const at = Date.now();
    const marks = Promise.allSettled([ledger.markDelivered("evt_old", "default", at), ledger.markDelivered("evt_new", "default", at)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await reader.deliveredAt("evt_new", "default")).toBeUndefined();
    // As the service stops: flush, then the connection quits at once.
    await ledger.flush();
    await own.quit();
    expect((await marks).map((result) => result.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(await reader.deliveredAt("evt_new", "default")).toBe(at);
    expect(await reader.deliveredAt("evt_old", "default")).toBe(at);
  });

  it("when a record is written, then its bytes are the layout ledger-core.lua documents (records written by an earlier version read the same), and marks 1, 2 and 3 varint bytes after the arrival read back exactly", async () => {
    const prefix = `test-${randomUUID()}`;
    const ledger = createEventLedger(redis, prefix, ttl, 1024);
    const receivedAt = 0x0123_4567_89ab;
    vi.useFakeTimers({ toFake: ["Date"], now: receivedAt });
    try {
      expect(await ledger.claim("evt_layout", { receivedAt, origin: "reconcile", streamId: "est_1", type: "user.updated", routes: ["a", "b", "c", "d"] }, false)).toBe(true);
      await ledger.markDelivered("evt_layout", "a", receivedAt + 100); // 1 byte
      await ledger.markDelivered("evt_layout", "b", receivedAt + 300); // 2 bytes: 300 = 0b10_0101100
      await ledger.markStale("evt_layout", "c", receivedAt + 20_000); // 3 bytes: 20,000 = 0b1_0011100_0100000
      expect(await ledger.claim("evt_layout", arrival(["a"], receivedAt + 9), false)).toBe(false);
      // The id's SHA-256: its first 4 bytes pick the shard, the next 8 are the field.
      const digest = createHash("sha256").update("evt_layout").digest();
      const bucket = ledgerBucketKey(prefix, digest.readUInt32BE(0) % 1024, Math.floor(receivedAt / (ttl * 1000)));
      expect(await ledgerKeys(redis, prefix)).toEqual(expect.arrayContaining([bucket, `${bucket}:names`]));
      const [field] = await redis.hkeysBuffer(bucket);
      expect(field?.toString("hex")).toBe(digest.toString("hex", 4, 12));
      const record = await redis.hgetBuffer(bucket, field!);
      // flags 1 arrived + 2 reconcile + 4 lastDuplicateAt + 8 counts; time; type 1, stream 2
      // (the dictionary's strings, in that order); duplicates 1, replays 0; lastDuplicateAt;
      // then per route its index (1 to 4: routes count apart), its marks and, when marked,
      // the mark's delta.
      expect(record?.toString("hex")).toBe(
        ["0f", "0123456789ab", "01", "02", "01", "00", "0123456789b4", "01", "03", "64", "02", "03", "ac02", "03", "05", "a09c01", "04", "01"].join(""),
      );
      expect(await ledger.get("evt_layout")).toMatchObject({
        receivedAt,
        origin: "reconcile",
        streamId: "est_1",
        type: "user.updated",
        routes: ["a", "b", "c", "d"],
        duplicates: 1,
        lastDuplicateAt: receivedAt + 9,
        deliveredAt: { a: receivedAt + 100, b: receivedAt + 300 },
        staleAt: { c: receivedAt + 20_000 },
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it("when duplicates and forced replays come, then they are counted on the record", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, ttl, 4);
    const receivedAt = Date.now();
    expect(await ledger.claim("evt_d", arrival(["a"], receivedAt), false)).toBe(true);
    expect(await ledger.claim("evt_d", arrival(["a"], receivedAt + 5), false)).toBe(false);
    await ledger.recordDuplicate("evt_d", receivedAt + 7);
    expect(await ledger.claim("evt_d", arrival(["a"], receivedAt + 9), true)).toBe(true);
    expect(await ledger.get("evt_d")).toMatchObject({ receivedAt, duplicates: 2, lastDuplicateAt: receivedAt + 7, replays: 1 });
  });

  it("when deliveries are marked before any arrival, then the id reads delivered_only and a later claim keeps those deliveries", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, ttl, 4);
    const markedAt = Date.now();
    await ledger.markDelivered("evt_c", "b", markedAt);
    // And routes the arrival does not match: their marks are kept, they are not its routes.
    await ledger.markDelivered("evt_c", "c", markedAt);
    await ledger.markStale("evt_c", "d", markedAt);
    expect(await ledger.lookup("evt_c")).toBe("delivered_only");
    expect(await ledger.has("evt_c")).toBe(false);
    expect(await ledger.get("evt_c")).toBeUndefined();
    expect(await ledger.claim("evt_c", arrival(["a", "b"], markedAt + 50), false)).toBe(true);
    const record = await ledger.get("evt_c");
    expect(record?.routes).toEqual(["a", "b"]);
    // A mark from before the arrival reads as the arrival's time.
    expect(record?.deliveredAt).toEqual({ b: markedAt + 50, c: markedAt + 50 });
    expect(record?.staleAt).toEqual({ d: markedAt + 50 });
    expect(await ledger.lookup("evt_c")).toBe("arrived");
  });

  it("when a record expired between the lookup and recordDuplicate, then it is not recreated", async () => {
    const prefix = `test-${randomUUID()}`;
    const ledger = createEventLedger(redis, prefix, ttl, 1);
    await ledger.claim("evt_e", arrival(["a"]), false);
    for (const key of await ledgerKeys(redis, prefix)) await redis.del(key);
    await ledger.recordDuplicate("evt_e", Date.now());
    expect(await ledgerKeys(redis, prefix)).toEqual([]);
    expect(await ledger.lookup("evt_e")).toBe("absent");
  });

  it("when any write lands on a key without a TTL (an expiry lost, or a key just created), then that key gets one within the window", async () => {
    const prefix = `test-${randomUUID()}`;
    const ledger = createEventLedger(redis, prefix, ttl, 1);
    const writes: Array<(id: string) => Promise<unknown>> = [
      (id) => ledger.claim(id, arrival(["a"]), false),
      (id) => ledger.claim(id, arrival(["a"]), true),
      (id) => ledger.recordDuplicate(id, Date.now()),
      (id) => ledger.markDelivered(id, "a", Date.now()),
      (id) => ledger.markStale(id, "a", Date.now()),
    ];
    await ledger.claim("evt_seed", arrival(["a"]), false);
    for (const write of writes) {
      const keys = await ledgerKeys(redis, prefix);
      for (const key of keys) await redis.persist(key);
      await write("evt_seed");
      for (const key of keys) {
        const left = await redis.ttl(key);
        expect(left).toBeGreaterThan(0);
        // The TTL plus one bucket (the TTL itself when shorter than a day).
        expect(left).toBeLessThanOrEqual(2 * ttl);
      }
    }
  });

  it("when a process is given another shard count than the ledger's first writer, then it still finds every id", async () => {
    const prefix = `test-${randomUUID()}`;
    const first = createEventLedger(redis, prefix, ttl, 8);
    const ids = Array.from({ length: 50 }, () => randomUUID());
    for (const id of ids) await first.claim(id, arrival(["a"]), false);
    const other = createEventLedger(redis, prefix, ttl, 1024);
    expect(await other.shards()).toBe(8);
    for (const id of ids) expect(await other.has(id)).toBe(true);
  });

  it("when a record is older than the TTL, then it reads as absent though its bucket lives on", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 2, 1);
    await ledger.claim("evt_old", arrival(["a"], Date.now() - 2500), false);
    await ledger.markDelivered("evt_old", "a", Date.now() - 2400);
    expect(await ledger.lookup("evt_old")).toBe("absent");
    expect(await ledger.deliveredAt("evt_old", "a")).toBeUndefined();
    // Stored again, it is a new arrival, not a duplicate.
    expect(await ledger.claim("evt_old", arrival(["a"]), false)).toBe(true);
    expect(await ledger.has("evt_old")).toBe(true);
  });

  it("when events come from a webhook, a reconcile and a pull, with a stream or none, then each record reads back its own origin and stream", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, ttl, 4);
    const origins = ["webhook", "reconcile", "pull"] as const;
    for (const origin of origins) {
      await ledger.claim(`evt_${origin}`, { ...arrival(["a"]), origin, streamId: `est_${origin}` }, false);
      await ledger.claim(`evt_${origin}_unstreamed`, { ...arrival(["a"]), origin, streamId: undefined }, false);
    }
    for (const origin of origins) {
      expect(await ledger.get(`evt_${origin}`)).toMatchObject({ origin, streamId: `est_${origin}` });
      const unstreamed = await ledger.get(`evt_${origin}_unstreamed`);
      expect(unstreamed?.origin).toBe(origin);
      expect(unstreamed).toHaveProperty("streamId", undefined);
    }
  });

  it("when an event arrived days ago within a week's TTL (a bucket far back in the window), then it still reads as arrived and its repeat is a duplicate", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 604_800, 1);
    for (const days of [1, 5, 6]) {
      const then = Date.now() - days * 86_400_000;
      vi.useFakeTimers({ toFake: ["Date"], now: then });
      try {
        expect(await ledger.claim(`evt_${days}d`, arrival(["default"], then), false)).toBe(true);
      } finally {
        vi.useRealTimers();
      }
    }
    for (const days of [1, 5, 6]) {
      expect(await ledger.lookup(`evt_${days}d`)).toBe("arrived");
      expect(await ledger.claim(`evt_${days}d`, arrival(["default"]), false)).toBe(false);
      expect(await ledger.get(`evt_${days}d`)).toMatchObject({ routes: ["default"], type: "user.updated", streamId: "est_1", duplicates: 1 });
    }
  });

  it("when the TTL is not a whole number of days (36 h) and an id came late on a day, then it still reads as arrived 26 h later, and as absent after the TTL", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 129_600, 1);
    const day = 86_400_000;
    // An hour before a day's end: 26 h later is two day buckets on, 36 h later three.
    const claimedAt = (Math.floor(Date.now() / day) - 3) * day - 3_600_000;
    const at = (ms: number) => vi.useFakeTimers({ toFake: ["Date"], now: ms });
    try {
      at(claimedAt);
      expect(await ledger.claim("evt_late", arrival(["default"], claimedAt), false)).toBe(true);
      at(claimedAt + 26 * 3_600_000);
      expect(await ledger.lookup("evt_late")).toBe("arrived");
      expect(await ledger.claim("evt_late", arrival(["default"]), false)).toBe(false);
      at(claimedAt + 36 * 3_600_000 + 1000);
      expect(await ledger.lookup("evt_late")).toBe("absent");
    } finally {
      vi.useRealTimers();
    }
  });

  it("when two processes with different shard counts write first at once, then both use the count that was written first", async () => {
    const prefix = `test-${randomUUID()}`;
    const first = createEventLedger(redis, prefix, ttl, 8);
    const second = createEventLedger(redis, prefix, ttl, 16);
    const [a, b] = await Promise.all([first.shards(), second.shards()]);
    expect([a, b]).toEqual([8, 8]);
    const ids = Array.from({ length: 20 }, () => randomUUID());
    for (const id of ids) await second.claim(id, arrival(["a"]), false);
    for (const id of ids) expect(await first.has(id)).toBe(true);
  });

  it("when a duplicate and a delivery are recorded at the epoch's first millisecond (0), then they read back as 0, not as none", async () => {
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, ttl, 1);
    // A record of time 0 is older than any TTL: read within the window of the ledger's own clock at 0.
    vi.useFakeTimers({ toFake: ["Date"], now: 0 });
    try {
      await ledger.claim("evt_epoch", arrival(["a"], 0), false);
      await ledger.recordDuplicate("evt_epoch", 0);
      await ledger.markDelivered("evt_epoch", "a", 0);
      expect(await ledger.get("evt_epoch")).toMatchObject({ receivedAt: 0, duplicates: 1, lastDuplicateAt: 0, deliveredAt: { a: 0 } });
      expect(await ledger.deliveredAt("evt_epoch", "a")).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

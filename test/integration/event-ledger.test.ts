import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { createEventLedger, type EventLedger } from "../../src/queue/event-ledger.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { checkRedisVersion } from "../../src/redis/redis-version.js";
import { ledgerKeys } from "../helpers/ledger-keys.js";

const arrival = { receivedAt: Date.now(), origin: "webhook" as const, type: "user.created", routes: ["all"] };

describe("event ledger: every record expires", () => {
  const redis = createRedis(inject("redisUrl"), "client");
  let prefix = `test-${randomUUID()}`;
  const ttl = 600;
  let ledger: EventLedger;
  // The ledger keeps an id's record in a shard's day buckets (event-ledger.ts); each test
  // has a prefix of its own, so the keys of its prefix are those of its ids.
  const fresh = () => {
    prefix = `test-${randomUUID()}`;
    ledger = createEventLedger(redis, prefix, ttl, 1);
  };
  const ttls = async () => Promise.all((await ledgerKeys(redis, prefix)).map((key) => redis.ttl(key)));

  beforeAll(async () => {
    await untilReady(redis);
    fresh();
  });
  afterAll(() => redis.disconnect());

  it("when the record expires between the lookup and recordDuplicate, then it is not recreated without a TTL", async () => {
    fresh();
    const id = randomUUID();
    await ledger.claim(id, arrival, false);
    for (const key of await ledgerKeys(redis, prefix)) await redis.del(key); // what an expiry right after the lookup leaves
    await ledger.recordDuplicate(id, 2);
    // No key at all; a positive TTL would do too; -1 (kept forever) is the bug.
    expect(await ttls()).not.toContain(-1);
  });

  it("when a record without a TTL (written by an earlier version) is written again, then it gets one", async () => {
    const writes: Array<(id: string) => Promise<unknown>> = [
      (id) => ledger.claim(id, arrival, false),
      (id) => ledger.claim(id, arrival, true),
      (id) => ledger.recordDuplicate(id, 2),
      (id) => ledger.markDelivered(id, "all", 3),
    ];
    for (const write of writes) {
      fresh();
      const id = randomUUID();
      await ledger.claim(id, arrival, false);
      for (const key of await ledgerKeys(redis, prefix)) await redis.persist(key);
      await write(id);
      for (const left of await ttls()) {
        expect(left).toBeGreaterThan(0);
        // A bucket lives the TTL past its last id: the TTL plus its own length (the TTL when shorter than a day).
        expect(left).toBeLessThanOrEqual(2 * ttl);
      }
    }
  });

  it("when a delivery is marked on an id with no record, then the new record expires", async () => {
    fresh();
    const id = randomUUID();
    await ledger.markDelivered(id, "all", Date.now());
    expect(await ledger.lookup(id)).toBe("delivered_only");
    const left = await ttls();
    expect(left.length).toBeGreaterThan(0);
    for (const seconds of left) expect(seconds).toBeGreaterThan(0);
  });

  it("when the service's Redis is checked, then the test Redis is new enough", async () => {
    await expect(checkRedisVersion(redis)).resolves.toBeUndefined();
  });
});

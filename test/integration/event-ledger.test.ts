import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { createEventLedger, type EventLedger } from "../../src/queue/event-ledger.js";
import { ledgerKey } from "../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../src/queue/redis-connection.js";
import { checkRedisVersion } from "../../src/queue/redis-version.js";

const arrival = { receivedAt: 1, origin: "webhook" as const, type: "user.created", routes: ["all"] };

describe("event ledger: every record expires", () => {
  const redis = createRedis(inject("redisUrl"), "client");
  const prefix = `test-${randomUUID()}`;
  const ttl = 600;
  let ledger: EventLedger;
  const ttlOf = (id: string) => redis.ttl(ledgerKey(prefix, id));

  beforeAll(async () => {
    await untilReady(redis);
    ledger = createEventLedger(redis, prefix, ttl);
  });
  afterAll(() => redis.disconnect());

  it("when the record expires between the lookup and recordDuplicate, then it is not recreated without a TTL", async () => {
    const id = randomUUID();
    await ledger.claim(id, arrival, false);
    await redis.del(ledgerKey(prefix, id)); // what an expiry right after the lookup leaves
    await ledger.recordDuplicate(id, 2);
    // -2: no key at all; a positive TTL would do too; -1 (kept forever) is the bug.
    expect(await ttlOf(id)).not.toBe(-1);
  });

  it("when a record without a TTL (written by an earlier version) is written again, then it gets one", async () => {
    const writes: Array<(id: string) => Promise<unknown>> = [
      (id) => ledger.claim(id, arrival, false),
      (id) => ledger.claim(id, arrival, true),
      (id) => ledger.recordDuplicate(id, 2),
      (id) => ledger.markDelivered(id, "all", 3),
    ];
    for (const write of writes) {
      const id = randomUUID();
      await redis.hset(ledgerKey(prefix, id), "receivedAt", 1);
      await write(id);
      const left = await ttlOf(id);
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(ttl);
    }
  });

  it("when a delivery is marked on an id with no record, then the new record expires", async () => {
    const id = randomUUID();
    await ledger.markDelivered(id, "all", 3);
    expect(await ledger.lookup(id)).toBe("delivered_only");
    expect(await ttlOf(id)).toBeGreaterThan(0);
  });

  it("when the service's Redis is checked, then the test Redis is new enough", async () => {
    await expect(checkRedisVersion(redis)).resolves.toBeUndefined();
  });
});

import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { EntityVersion } from "../../src/events/entity-version.js";
import { createEntityVersions, type EntityVersions } from "../../src/queue/entity-versions.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";

/**
 * The Lua side of dropStale against a real Redis: which state may follow which, the lease
 * around a delivery, and what one entity's version costs in memory.
 */
describe("entity versions", () => {
  const redis = createRedis(inject("redisUrl"), "client");
  const prefix = `test-${randomUUID()}`;
  let versions: EntityVersions;
  let entityCount = 0;
  /** A fresh entity per test. */
  const entity = () => `user:auth0|${++entityCount}${randomUUID().slice(0, 8)}`;
  /** A state of its own event unless `eventId` says which: a re-run of one event's state gives it. */
  const v = (name: string, age: number, change: EntityVersion["change"] = "changed", eventId = randomUUID()): EntityVersion => ({ entity: name, age, change, eventId });
  /** Enters and leaves as one delivery answered 2xx; resolves what enter found. */
  const deliver = async (version: EntityVersion, route = "crm") => {
    const owner = randomUUID();
    const entry = await versions.enter(route, version, owner, 10_000);
    if (entry.outcome === "go") await versions.leave(route, version, owner, "delivered");
    return entry.outcome;
  };

  beforeAll(async () => {
    await untilReady(redis);
    versions = createEntityVersions(redis, prefix, 600);
  });
  afterAll(() => redis.disconnect());

  it("when a state was delivered, then an older one is stale, an equal or newer one goes", async () => {
    const user = entity();
    expect(await deliver(v(user, 200))).toBe("go");
    expect(await deliver(v(user, 100))).toBe("stale");
    expect(await deliver(v(user, 200))).toBe("go");
    expect(await deliver(v(user, 300))).toBe("go");
    expect(await deliver(v(user, 250))).toBe("stale");
  });

  it("when routes or entities differ, then their versions are apart", async () => {
    const user = entity();
    expect(await deliver(v(user, 200), "crm")).toBe("go");
    expect(await deliver(v(user, 100), "audit")).toBe("go");
    expect(await deliver(v(entity(), 100), "crm")).toBe("go");
  });

  it("when a delete was delivered, then no later update goes, whatever its time, nor an older delete or create; a newer create (a re-created user) or a newer delete does", async () => {
    const user = entity();
    expect(await deliver(v(user, 200))).toBe("go");
    expect(await deliver(v(user, 150, "deleted"))).toBe("go"); // older than the update, still the newest state
    expect(await deliver(v(user, 100))).toBe("stale");
    expect(await deliver(v(user, 900))).toBe("stale");
    expect(await deliver(v(user, 200, "deleted"))).toBe("stale"); // not newer than the delete (kept at 200)
    expect(await deliver(v(user, 150, "created"))).toBe("stale");
    expect(await deliver(v(user, 200, "created"))).toBe("stale");
    expect(await deliver(v(user, 201, "created"))).toBe("go");
    expect(await deliver(v(user, 150))).toBe("stale");
    expect(await deliver(v(user, 300))).toBe("go");
    expect(await deliver(v(user, 400, "deleted"))).toBe("go");
    expect(await deliver(v(user, 500, "deleted"))).toBe("go"); // deleted again after a re-create whose own event is late
    expect(await deliver(v(user, 450, "created"))).toBe("stale"); // that late create: the delete is newer
  });

  it("when a user is re-created and deleted again while the create holds the entity, then the second delete waits for it and goes, not stale", async () => {
    const user = entity();
    expect(await deliver(v(user, 5, "deleted"))).toBe("go");
    const holder = randomUUID();
    expect(await versions.enter("crm", v(user, 10, "created"), holder, 10_000)).toEqual({ outcome: "go" });
    const second = randomUUID();
    expect((await versions.enter("crm", v(user, 12, "deleted"), second, 10_000)).outcome).toBe("busy");
    expect(await versions.leave("crm", v(user, 10, "created"), holder, "delivered")).toBe(true);
    expect(await versions.enter("crm", v(user, 12, "deleted"), second, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", v(user, 12, "deleted"), second, "delivered")).toBe(true);
    expect(await deliver(v(user, 11))).toBe("stale");
  });

  it("when a delete's attempt had no answer, then its retry goes again (the route may not have it), and states older than it stay stale", async () => {
    const user = entity();
    expect(await deliver(v(user, 200))).toBe("go");
    // Recorded at 200 (a delete is the newest state), as a received one: no answer may mean delivered.
    const remove = v(user, 150, "deleted");
    const first = randomUUID();
    expect(await versions.enter("crm", remove, first, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", remove, first, "unanswered")).toBe(true);
    // The same event's retry: its own state recorded, not a newer one.
    const retry = randomUUID();
    expect(await versions.enter("crm", { ...remove }, retry, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", remove, retry, "delivered")).toBe(true);
    expect(await deliver(v(user, 900))).toBe("stale");
    expect(await deliver(v(user, 200, "created"))).toBe("stale");
    // Another delete of the same age is another event: the rules apply to it.
    expect(await deliver(v(user, 150, "deleted"))).toBe("stale");
  });

  it("when a state's attempt had no answer and a newer state was delivered since, then its retry is stale: only the state recorded goes again", async () => {
    const user = entity();
    const late = v(user, 300);
    const owner = randomUUID();
    expect(await versions.enter("crm", late, owner, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", late, owner, "unanswered")).toBe(true);
    expect(await deliver(v(user, 400))).toBe("go");
    expect(await versions.enter("crm", late, randomUUID(), 10_000)).toEqual({ outcome: "stale" });
  });

  it("when a delete with no answer is tagged and a worker of an earlier release (plain versions, no tags) records a newer state over it, then the tag no longer counts: the delete's retry follows the rules", async () => {
    const user = entity();
    const remove = v(user, 500, "deleted");
    const owner = randomUUID();
    expect(await versions.enter("crm", remove, owner, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", remove, owner, "unanswered")).toBe(true);
    // Versions stay plain numbers, as every release reads and writes them.
    const keys = (await redis.keys(`{${prefix}:versions:crm:*`)).filter((key) => !key.includes(":lease:") && !key.includes(":tags:"));
    const holding = (await Promise.all(keys.map(async (key) => ((await redis.hget(key, user)) !== null ? key : undefined)))).filter(Boolean) as string[];
    expect(await redis.hget(holding[0]!, user)).toBe("-500");
    // An earlier release's worker records a newer delete over it, written as it writes, plain.
    await redis.hset(holding[0]!, user, "-600");
    // The tag names -500, no longer the newest: the retry follows the rules, and is stale.
    expect(await versions.enter("crm", remove, randomUUID(), 10_000)).toEqual({ outcome: "stale" });
  });

  it("when an update or a create gets no answer, then no tag is kept: its retry passes by the rules alone", async () => {
    const user = entity();
    for (const state of [v(user, 100, "created"), v(user, 200)]) {
      const owner = randomUUID();
      expect(await versions.enter("crm", state, owner, 10_000)).toEqual({ outcome: "go" });
      expect(await versions.leave("crm", state, owner, "unanswered")).toBe(true);
      const retry = randomUUID();
      expect(await versions.enter("crm", state, retry, 10_000)).toEqual({ outcome: "go" });
      expect(await versions.leave("crm", state, retry, "delivered")).toBe(true);
    }
    const tagKeys = await redis.keys(`{${prefix}:versions:crm:*}:tags:*`);
    expect(await Promise.all(tagKeys.map((tagKey) => redis.hexists(tagKey, user)))).not.toContain(1);
  });

  it("when a state answered non-2xx, then it records nothing: an older one still goes", async () => {
    const user = entity();
    const owner = randomUUID();
    expect(await versions.enter("crm", v(user, 500), owner, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", v(user, 500), owner, "refused")).toBe(true);
    expect(await deliver(v(user, 100))).toBe("go");
  });

  it("when another delivery holds the entity, then enter is busy with the lease's time left, and goes once it leaves", async () => {
    const user = entity();
    const holder = randomUUID();
    expect(await versions.enter("crm", v(user, 100), holder, 10_000)).toEqual({ outcome: "go" });
    const busy = await versions.enter("crm", v(user, 200), randomUUID(), 10_000);
    expect(busy.outcome).toBe("busy");
    expect(busy.outcome === "busy" && busy.leaseLeftMs > 0 && busy.leaseLeftMs <= 10_000).toBe(true);
    // Even a stale state waits: the holder's state is not recorded yet.
    expect((await versions.enter("crm", v(user, 50), randomUUID(), 10_000)).outcome).toBe("busy");
    expect(await versions.leave("crm", v(user, 100), holder, "delivered")).toBe(true);
    expect(await deliver(v(user, 50))).toBe("stale");
    expect(await deliver(v(user, 200))).toBe("go");
  });

  it("when another delivery holds the entity and a state is older than the one recorded, then it is stale at once, not busy (it would stay stale whatever the holder delivers)", async () => {
    const user = entity();
    expect(await deliver(v(user, 200))).toBe("go");
    const holder = randomUUID();
    expect(await versions.enter("crm", v(user, 300), holder, 10_000)).toEqual({ outcome: "go" });
    expect(await versions.enter("crm", v(user, 100), randomUUID(), 10_000)).toEqual({ outcome: "stale" });
    // A stale answer takes nothing: the holder still holds the entity and gives it back.
    expect((await versions.enter("crm", v(user, 400), randomUUID(), 10_000)).outcome).toBe("busy");
    expect(await versions.leave("crm", v(user, 300), holder, "delivered")).toBe(true);
    expect(await deliver(v(user, 250))).toBe("stale");
  });

  it("when the holder crashed, then its lease expires and the entity flows again; the late holder's record never moves the version back", async () => {
    const user = entity();
    const crashed = randomUUID();
    expect(await versions.enter("crm", v(user, 100), crashed, 50)).toEqual({ outcome: "go" });
    const deadline = Date.now() + 10_000;
    let entry = await versions.enter("crm", v(user, 300), "next", 10_000);
    while (entry.outcome === "busy" && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, entry.outcome === "busy" ? entry.leaseLeftMs : 0));
      entry = await versions.enter("crm", v(user, 300), "next", 10_000);
    }
    expect(entry).toEqual({ outcome: "go" });
    expect(await versions.leave("crm", v(user, 300), "next", "delivered")).toBe(true);
    // The crashed holder comes back late: its lease is gone, and its older state is not recorded over 300.
    expect(await versions.leave("crm", v(user, 100), crashed, "delivered")).toBe(false);
    expect(await deliver(v(user, 200))).toBe("stale");
  });

  it("when the TTL's window turns, then a version is still seen in the next window, gone two windows on; a worker whose clock runs ahead is seen too", async () => {
    const windowMs = 600_000;
    const t0 = Math.floor(Date.now() / windowMs) * windowMs + 1000;
    const user = entity();
    const at = async (now: number, version: EntityVersion) => {
      const owner = randomUUID();
      const entry = await versions.enter("crm", version, owner, 10_000, now);
      if (entry.outcome === "go") await versions.leave("crm", version, owner, "delivered", now);
      return entry.outcome;
    };
    expect(await at(t0, v(user, 500))).toBe("go");
    expect(await at(t0 + windowMs, v(user, 100))).toBe("stale");
    expect(await at(t0 + 2 * windowMs - 2000, v(user, 100))).toBe("stale");
    // Two windows on, the version is forgotten (kept one to two TTLs after its last delivery).
    expect(await at(t0 + 2 * windowMs, v(user, 100))).toBe("go");

    // A worker ahead of the window writes a newer state into the next one; a worker still
    // in the current window sees it, and its own write does not hide it.
    const skewed = entity();
    expect(await at(t0 + windowMs - 1000, v(skewed, 100))).toBe("go");
    expect(await at(t0 + windowMs, v(skewed, 300, "deleted"))).toBe("go");
    expect(await at(t0 + windowMs - 900, v(skewed, 200))).toBe("stale");
    expect(await at(t0 + windowMs - 800, v(skewed, 100, "created"))).toBe("stale");
  });

  it("when versions are kept, then each window's hash expires at the end of the next window, leaves no lease behind, and costs a few dozen bytes an entity", async () => {
    const user = "user:auth0|679fb1b1e809445f129bc18d";
    const deliveredAt = Date.now();
    expect(await deliver(v(user, Date.parse("2025-02-02T17:56:01.566Z")))).toBe("go");
    const candidates = (await redis.keys(`{${prefix}:versions:crm:*`)).filter((candidate) => !candidate.includes("}:lease:"));
    const holding = await Promise.all(candidates.map(async (candidate) => (await redis.hexists(candidate, user)) === 1));
    const key = candidates.find((_, index) => holding[index]);
    expect(key).toBeDefined();
    expect(await redis.hget(key!, user)).toBe(String(Date.parse("2025-02-02T17:56:01.566Z")));
    // The expiry as a point in time (a TTL read shrinks with every second the test takes, and
    // crosses 600 near a window edge): the end of a 600 s window, one to two windows after the delivery.
    const pttl = await redis.pttl(key!);
    const expiresAt = Date.now() + pttl;
    const windowEnd = Math.round(expiresAt / 600_000) * 600_000;
    expect(Math.abs(expiresAt - windowEnd), `expires at ${new Date(expiresAt).toISOString()}, not at a window's end`).toBeLessThan(1000);
    expect(windowEnd - deliveredAt).toBeGreaterThan(600_000);
    expect(windowEnd - deliveredAt).toBeLessThanOrEqual(1_200_000);
    expect(await redis.keys(`{${prefix}:versions:crm:*}:lease:${user}`)).toEqual([]);
    expect(await redis.object("ENCODING", key!)).toBe("listpack");
    // A delivered state leaves no tag behind: only an unanswered one is tagged.
    const tagKeys = await redis.keys(`{${prefix}:versions:crm:*}:tags:*`);
    expect(await Promise.all(tagKeys.map((tagKey) => redis.hexists(tagKey, user)))).not.toContain(1);
    expect(await deliver(v(user, Date.parse("2025-02-02T17:00:00.000Z")))).toBe("stale");
    expect(await deliver(v(user, Date.parse("2025-02-02T18:00:00.000Z")))).toBe("go");
  });
});

describe("entity versions on a Redis Cluster", () => {
  it("when the versions live on a three-master cluster, then the lease and the three window hashes share their shard's slot and the scripts run", async () => {
    const cluster = await startRedisCluster(3);
    const redis = createRedis(cluster.url, "client");
    try {
      await untilReady(redis);
      const versions = createEntityVersions(redis, `test-${randomUUID()}`, 600);
      const version = (age: number): EntityVersion => ({ entity: "organization:org_cluster", age, change: "changed", eventId: `evt_${age}` });
      expect(await versions.enter("crm", version(200), "a", 10_000)).toEqual({ outcome: "go" });
      expect((await versions.enter("crm", version(300), "b", 10_000)).outcome).toBe("busy");
      expect(await versions.leave("crm", version(200), "a", "delivered")).toBe(true);
      expect(await versions.enter("crm", version(100), "c", 10_000)).toEqual({ outcome: "stale" });
    } finally {
      redis.disconnect();
      await cluster.stop();
    }
  });
});

import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { createPullState, poisonKept, pullKey, type PullPoison, type PullState } from "../../../src/pull/pull-state.js";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";

/**
 * What the pull keeps in Redis (README.md#pulling-events-pull-on): the offset it resumes
 * from, written only by the worker holding the pull's lease; what GET /admin/pull shows
 * from any process; the poison kept aside. A real Redis, one prefix per test.
 */
describe("the pull's state in Redis", () => {
  const redis = createRedis(inject("redisUrl"), "client");
  const prefixes: string[] = [];
  const fresh = (): { prefix: string; state: PullState } => {
    const prefix = `test-${randomUUID()}`;
    prefixes.push(prefix);
    return { prefix, state: createPullState(redis, prefix) };
  };

  beforeAll(async () => {
    await untilReady(redis);
  });
  afterAll(async () => {
    for (const prefix of prefixes) await redis.del(...(["lease", "position", "status", "poison"] as const).map((name) => pullKey(prefix, name)));
    redis.disconnect();
  });

  it("when nothing was kept yet, then the position is empty and GET /admin/pull shows no offset, no event time, no error and no holder", async () => {
    const { state } = fresh();
    expect(await state.position()).toEqual({ offset: undefined, offsetAt: undefined, lastEventAt: undefined });
    expect(await state.describe(true)).toEqual({ state: "waiting", offsetAt: null, lastEventAt: null, lastError: null, holder: null, poison: { count: 0, newest: [] } });
  });

  it("when the worker holding the lease keeps an offset, then it is where the pull resumes, with when it was kept and the last event's time; an offset kept without an event time keeps the last one", async () => {
    const { state } = fresh();
    expect(await state.lease.acquire("worker-a", 60_000)).toBe(0);
    const before = Date.now();
    expect(await state.keep("worker-a", "offset-1", "2026-11-27T07:00:00.000Z")).toBe(true);
    const first = await state.position();
    expect(first).toMatchObject({ offset: "offset-1", lastEventAt: "2026-11-27T07:00:00.000Z" });
    expect(Date.parse(first.offsetAt!)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(first.offsetAt!)).toBeLessThanOrEqual(Date.now() + 1000);
    // A message with nothing to store (a heartbeat's offset) moves the offset, not the event's time.
    expect(await state.keep("worker-a", "offset-2")).toBe(true);
    expect(await state.position()).toMatchObject({ offset: "offset-2", lastEventAt: "2026-11-27T07:00:00.000Z" });
    const shown = await state.describe(true);
    expect(shown.offsetAt).toBe((await state.position()).offsetAt);
    expect(shown.lastEventAt).toBe("2026-11-27T07:00:00.000Z");
  });

  it("when a worker no longer holds the lease, then its offset is not kept and the holder's stays", async () => {
    const { state } = fresh();
    expect(await state.lease.acquire("worker-a", 60_000)).toBe(0);
    expect(await state.keep("worker-a", "offset-a", "2026-11-27T07:00:00.000Z")).toBe(true);
    // worker-b stalled, lost the lease to worker-a, and wakes up with an older offset.
    expect(await state.keep("worker-b", "offset-b", "2026-11-27T06:00:00.000Z")).toBe(false);
    expect(await state.position()).toMatchObject({ offset: "offset-a", lastEventAt: "2026-11-27T07:00:00.000Z" });
    // Nobody holds it: nobody keeps an offset.
    expect(await state.lease.release("worker-a")).toBe(true);
    expect(await state.keep("worker-a", "offset-late")).toBe(false);
    expect((await state.position()).offset).toBe("offset-a");
  });

  it("when the holder reports its state, then every process shows it with the holder and its last error; without a holder, or when it said off, the state is waiting", async () => {
    const { state } = fresh();
    await state.report("connected", null);
    // Reported, but the lease is free (the worker stopped or crashed): nobody reads.
    expect(await state.describe(true)).toMatchObject({ state: "waiting", holder: null, lastError: null });
    expect(await state.lease.acquire("host:1:tag", 60_000)).toBe(0);
    expect(await state.describe(true)).toEqual({ state: "connected", offsetAt: null, lastEventAt: null, lastError: null, holder: "host:1:tag", poison: { count: 0, newest: [] } });
    await state.report("connecting", "the tenant answered 503");
    expect(await state.describe(true)).toMatchObject({ state: "connecting", lastError: "the tenant answered 503", holder: "host:1:tag" });
    await state.report("off", null);
    expect(await state.describe(true)).toMatchObject({ state: "waiting", lastError: null, holder: "host:1:tag" });
  });

  it("when PULL is off, then the state is off whatever a worker reported", async () => {
    const { state } = fresh();
    expect(await state.describe(false)).toMatchObject({ state: "off" });
    expect(await state.lease.acquire("host:1:tag", 60_000)).toBe(0);
    await state.report("connected", null);
    expect(await state.describe(false)).toMatchObject({ state: "off", holder: "host:1:tag" });
  });

  it("when poison is kept aside, then it is read back newest first (100 unless asked), and only the newest 10,000 are kept", async () => {
    const { prefix, state } = fresh();
    const poison = (n: number): PullPoison => ({ offset: `o${n}`, reason: `reason ${n}`, raw: `{raw ${n}`, at: "2026-11-27T07:00:00.000Z" });
    // The oldest poisonKept - 1 written directly (oldest at the list's tail, as keepAside leaves them), then 2 more kept aside.
    const older = Array.from({ length: poisonKept - 1 }, (_, n) => JSON.stringify(poison(n)));
    await redis.lpush(pullKey(prefix, "poison"), ...older);
    await state.keepAside(poison(poisonKept - 1));
    expect(await redis.llen(pullKey(prefix, "poison"))).toBe(poisonKept);
    await state.keepAside(poison(poisonKept));
    expect(await redis.llen(pullKey(prefix, "poison"))).toBe(poisonKept);
    const newest = await state.poison();
    expect(newest).toHaveLength(100);
    expect(newest.slice(0, 2)).toEqual([poison(poisonKept), poison(poisonKept - 1)]);
    expect(await state.poison(3)).toEqual([poison(poisonKept), poison(poisonKept - 1), poison(poisonKept - 2)]);
    // The oldest (0) went; 1 is now the oldest kept.
    const oldest = await redis.lrange(pullKey(prefix, "poison"), -1, -1);
    expect(JSON.parse(oldest[0]!)).toEqual(poison(1));
  });

  it("when two prefixes share a Redis, then their pulls' states are apart", async () => {
    const a = fresh();
    const b = fresh();
    expect(await a.state.lease.acquire("worker-a", 60_000)).toBe(0);
    expect(await a.state.keep("worker-a", "offset-a")).toBe(true);
    expect(await b.state.keep("worker-a", "offset-a")).toBe(false);
    expect((await b.state.position()).offset).toBeUndefined();
    expect(await b.state.describe(true)).toMatchObject({ holder: null, offsetAt: null });
  });

  it("when an operator reads the keys docs/operating.md names, then the holder, the offset and the poison are there", async () => {
    const { prefix, state } = fresh();
    expect(await state.lease.acquire("host:1:tag", 60_000)).toBe(0);
    expect(await state.keep("host:1:tag", "offset-9", "2026-11-27T07:00:00.000Z")).toBe(true);
    await state.keepAside({ offset: "offset-10", reason: "the message data is not JSON", raw: "{not json", at: "2026-11-27T07:00:01.000Z" });
    // Written out, not built with pullKey: these names are documented, and processes of two releases share them.
    expect(await redis.get(`{${prefix}:pull}:lease`)).toBe("host:1:tag");
    expect(await redis.hget(`{${prefix}:pull}:position`, "offset")).toBe("offset-9");
    expect(JSON.parse((await redis.lrange(`{${prefix}:pull}:poison`, 0, -1))[0]!)).toMatchObject({ offset: "offset-10", raw: "{not json" });
  });
});

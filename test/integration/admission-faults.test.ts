import { mkdtemp } from "node:fs/promises";
import { outboxFields } from "../../src/archive/archive-record.js";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, inject } from "vitest";
import { archiveOutboxKey } from "../../src/archive/archive-outbox.js";
import { routesMatching } from "../../src/routes/route.js";
import { createAdmission } from "../../src/queue/admission.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore, type EventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

/**
 * The admission (one script: check, every route's job, the outbox entry, the claim) with a
 * Redis failure injected at each step boundary, and the receiver lost after the script ran.
 * Each test ends the same way: the tenant's retry is stored or answered as a duplicate,
 * each route gets the event once, and a later repeat is a duplicate.
 */
describe("admission: faults between its steps", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setUp() {
    const [a, b] = [await startSinkServer(), await startSinkServer()];
    const harness = await createDispatchHarness(redisUrl, [testRoute("a", a.url), testRoute("b", b.url)]);
    cleanup.push(() => a.close(), () => b.close(), () => harness.close());
    const redis = harness.queues.connection;
    const outboxKey = archiveOutboxKey(harness.prefix);
    cleanup.push(() => redis.del(outboxKey));
    const storeOn = (connection = redis) => {
      const queues = connection === redis ? harness.queues : createDeliveryQueues(connection, harness.prefix, [testRoute("a", a.url), testRoute("b", b.url)], { ageSeconds: 60, count: 1000 });
      const ledger = connection === redis ? harness.ledger : createEventLedger(connection, harness.prefix, 600);
      return createEventStore({
        ledger,
        fanOut: createFanOut(queues),
        routesFor: routesMatching([testRoute("a", a.url), testRoute("b", b.url)]),
        archive: async (record) => void (await connection.xadd(outboxKey, "*", "r", JSON.stringify(record))),
        admit: createAdmission({ ledger, queues, outbox: outboxKey ? { key: outboxKey, fieldsOf: outboxFields } : undefined }),
      });
    };
    return { a, b, harness, redis, outboxKey, store: storeOn(), storeOn };
  }

  /** A store whose Redis connection runs through a proxy that can lose requests or replies, warmed up first (the ledger's shard count read, the script defined on that connection). */
  async function storeBehindLossyProxy(storeOn: (connection: RedisClient) => EventStore) {
    const proxy = await startLossyProxy(new URL(redisUrl));
    cleanup.push(() => proxy.close());
    const connection = createRedis(proxy.url, "client");
    connection.on("error", () => {});
    await untilReady(connection);
    cleanup.push(async () => connection.disconnect());
    const lost = storeOn(connection);
    await lost.store(userEvent(), { origin: "webhook" });
    return { proxy, lost };
  }

  /** Each route got the event once, and a repeat is a duplicate that reaches no route (a later event proves the queues moved past it). */
  async function deliveredOnce(harness: DispatchHarness, store: EventStore, sinks: SinkServer[], id: string) {
    const has = (sink: SinkServer, wanted: string) => sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === wanted));
    harness.startDispatcher();
    await Promise.all(sinks.map((sink) => has(sink, id)));
    await expect(store.store({ ...userEvent(), id }, { origin: "webhook" })).resolves.toMatchObject({ status: "duplicate" });
    const later = userEvent();
    await expect(store.store(later, { origin: "webhook" })).resolves.toMatchObject({ status: "stored" });
    await Promise.all(sinks.map((sink) => has(sink, later.id)));
    for (const sink of sinks) expect(sink.requests.filter((request) => request.headers["webhook-id"] === id)).toHaveLength(1);
  }

  it("when the second route's job fails after the first was added, then nothing is claimed, and the retry adds the missing job only and is delivered once per route", async () => {
    const { a, b, harness, redis, store } = await setUp();
    const event = userEvent();
    // Route b's queue metadata of the wrong type: BullMQ's add fails there, after route a's job.
    const meta = harness.queues.forRoute("b").keys.meta!;
    await redis.set(meta, "not a hash");
    await expect(store.store(event, { origin: "webhook" })).rejects.toThrow(/WRONGTYPE/);
    expect(await harness.ledger.lookup(event.id)).toBe("absent");
    expect(await harness.queues.forRoute("a").getJob(jobIdFor(event.id))).toBeDefined();
    expect(await harness.queues.forRoute("b").getJob(jobIdFor(event.id))).toBeUndefined();

    await redis.del(meta);
    await expect(store.store(event, { origin: "webhook" })).resolves.toEqual({ status: "stored", routes: ["a", "b"] });
    for (const route of ["a", "b"]) expect(await harness.queues.forRoute(route).getJobCounts("wait")).toEqual({ wait: 1 });
    await deliveredOnce(harness, store, [a, b], event.id);
  });

  it("when the outbox entry fails after every job, before the claim, then the retry is stored (not a duplicate), with no job twice and one outbox entry", async () => {
    const { a, b, harness, redis, outboxKey, store } = await setUp();
    const event = userEvent();
    await redis.set(outboxKey, "not a stream");
    await expect(store.store(event, { origin: "webhook" })).rejects.toThrow(/WRONGTYPE/);
    expect(await harness.ledger.lookup(event.id)).toBe("absent");
    for (const route of ["a", "b"]) expect(await harness.queues.forRoute(route).getJob(jobIdFor(event.id))).toBeDefined();

    await redis.del(outboxKey);
    await expect(store.store(event, { origin: "webhook" })).resolves.toEqual({ status: "stored", routes: ["a", "b"] });
    for (const route of ["a", "b"]) expect(await harness.queues.forRoute(route).getJobCounts("wait")).toEqual({ wait: 1 });
    const entries = await redis.xrange(outboxKey, "-", "+");
    expect(entries.map(([, fields]) => (JSON.parse(fields[1]!) as { id: string }).id)).toEqual([event.id]);
    await deliveredOnce(harness, store, [a, b], event.id);
  });

  it("when the script never reaches Redis, then nothing is written and the retry stores the event once", async () => {
    const { a, b, harness, store, storeOn } = await setUp();
    const { proxy, lost } = await storeBehindLossyProxy(storeOn);
    const event = userEvent();
    proxy.lose("requests");
    await expect(lost.store(event, { origin: "webhook" })).rejects.toThrow();
    expect(await harness.ledger.lookup(event.id)).toBe("absent");
    for (const route of ["a", "b"]) expect(await harness.queues.forRoute(route).getJob(jobIdFor(event.id))).toBeUndefined();

    await expect(store.store(event, { origin: "webhook" })).resolves.toEqual({ status: "stored", routes: ["a", "b"] });
    harness.startDispatcher();
    await Promise.all([a, b].map((sink) => sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === event.id))));
    for (const sink of [a, b]) expect(sink.requests.filter((request) => request.headers["webhook-id"] === event.id)).toHaveLength(1);
  });

  it("when the receiver is lost after the script ran (its answer never arrives), then the tenant's retry is answered as a duplicate and each route gets the event once", async () => {
    const { a, b, harness, store, storeOn } = await setUp();
    const { proxy, lost } = await storeBehindLossyProxy(storeOn);
    const event = userEvent();
    proxy.lose("replies");
    await expect(lost.store(event, { origin: "webhook" })).rejects.toThrow();
    // The script ran whole: the claim and both jobs are there.
    await expect.poll(() => harness.ledger.lookup(event.id)).toBe("arrived");
    for (const route of ["a", "b"]) expect(await harness.queues.forRoute(route).getJob(jobIdFor(event.id))).toBeDefined();

    await expect(store.store(event, { origin: "webhook" })).resolves.toEqual({ status: "duplicate", routes: [] });
    await deliveredOnce(harness, store, [a, b], event.id);
  });

  it("when Redis is SIGKILLed during admissions and restarts from its append-only file, then each id has its claim and every job or none of them, and every acknowledged id has them", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-admit-kill-"));
    // Every write on disk before its reply: with `everysec`, a disk slowed by other runs makes
    // Redis postpone its writes, and a kill then loses acknowledged ones (docs/reliability.md,
    // "What Redis can lose"). This test proves the admission's part alone.
    const durable = { appendOnly: true, extraArgs: ["--appendfsync", "always"] };
    let server = await startRedisServer({ dir, ...durable });
    const port = server.port;
    cleanup.push(() => server.stop());
    const prefix = "admit-kill";
    const routes = [testRoute("a", "http://127.0.0.1:9/"), testRoute("b", "http://127.0.0.1:9/")];
    const open = async (url: string) => {
      const connection = createRedis(url, "client");
      connection.on("error", () => {});
      await untilReady(connection);
      const queues = createDeliveryQueues(connection, prefix, routes, { ageSeconds: 60, count: 100_000 });
      for (const queue of queues.all()) queue.on("error", () => {});
      const ledger = createEventLedger(connection, prefix, 600);
      const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes), admit: createAdmission({ ledger, queues }) });
      return { connection, queues, ledger, store, close: async () => (connection.disconnect(), await queues.close().catch(() => {})) };
    };
    const before = await open(server.url);
    const sent: string[] = [];
    const acknowledged: string[] = [];
    let killed: Promise<void> | undefined;
    // 20 senders until Redis is gone; it is killed once 300 stores were acknowledged, while the others are in flight.
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (sent.length < 20_000) {
          const event = userEvent();
          sent.push(event.id);
          try {
            await before.store.store(event, { origin: "webhook" });
            acknowledged.push(event.id);
            if (acknowledged.length === 300) killed = server.kill();
          } catch {
            return;
          }
        }
      }),
    );
    await killed;
    await before.close();
    expect(acknowledged.length).toBeGreaterThanOrEqual(300);

    server = await startRedisServer({ dir, port, ...durable });
    const after = await open(server.url);
    cleanup.push(() => after.close());
    const states = await Promise.all(
      sent.map(async (id) => ({
        id,
        claimed: (await after.ledger.lookup(id)) === "arrived",
        jobs: (await Promise.all(["a", "b"].map((route) => after.queues.forRoute(route).getJob(jobIdFor(id))))).filter(Boolean).length,
      })),
    );
    expect(states.filter((state) => !(state.claimed ? state.jobs === 2 : state.jobs === 0))).toEqual([]);
    const stored = new Set(states.filter((state) => state.claimed).map((state) => state.id));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  });
});

/** A TCP proxy to Redis that can lose what goes one way: the requests (they never reach Redis) or the replies (Redis ran them; the client never hears). */
async function startLossyProxy(target: URL) {
  const sockets = new Set<Socket>();
  let losing: "requests" | "replies" | undefined;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => (client.destroy(), upstream.destroy()));
    }
    client.on("data", (chunk) => (losing === "requests" ? client.destroy() : upstream.write(chunk)));
    upstream.on("data", (chunk) => (losing === "replies" ? client.destroy() : client.write(chunk)));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lose(way: "requests" | "replies") {
      losing = way;
    },
    close: () => new Promise<void>((ok) => (sockets.forEach((socket) => socket.destroy()), server.close(() => ok()))),
  };
}

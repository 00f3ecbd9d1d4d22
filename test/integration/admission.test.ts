import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createAdmission } from "../../src/queue/admission.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { userEvent } from "../helpers/fixtures.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";

const route = (name: string): Route => ({ name, match: ["*"], url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 3, concurrency: 1 });
const routes = [route("a"), route("b")];

function storeOn(redis: Redis, prefix: string) {
  const queues = createDeliveryQueues(redis, prefix, routes, { ageSeconds: 60, count: 1000 });
  const ledger = createEventLedger(redis, prefix, 3600);
  const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes), admit: createAdmission({ ledger, queues }) });
  return { queues, ledger, store };
}

/** The commands this process sends on `redis` while `run` runs (commands a script runs inside Redis are not sent). */
async function commandsSentBy(redis: Redis, run: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Parameters<typeof send>[0], stream?: Parameters<typeof send>[1]) => (sent.push(command.name), send(command, stream))) as typeof redis.sendCommand;
  try {
    await run();
  } finally {
    redis.sendCommand = send;
  }
  return sent;
}

describe("admission: one round trip", () => {
  // A Redis of its own: its command counts are this test's alone.
  let dir: string;
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "admission-"));
    server = await startRedisServer({ dir, appendOnly: false });
    redis = createRedis(server.url, "client") as Redis;
    await untilReady(redis);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("when new ids are stored for two routes, then each turn's stores are one command (a script call) and nothing else, and leave both jobs and the claim", async () => {
    const { queues, ledger, store } = storeOn(redis, `test-${randomUUID()}`);
    await store.store(userEvent(), { origin: "webhook" }); // the shard count read, the script loaded
    const ids: string[] = [];
    // What this process sends, counted at the connection (commands a script runs in Redis are not sent).
    const sent: string[] = [];
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: Parameters<typeof send>[0], stream?: Parameters<typeof send>[1]) => (sent.push(command.name), send(command, stream))) as typeof redis.sendCommand;
    const one = userEvent();
    try {
      await expect(store.store(one, { origin: "webhook" })).resolves.toEqual({ status: "stored", routes: ["a", "b"] });
      const twenty = Array.from({ length: 20 }, () => userEvent());
      await Promise.all(twenty.map((event) => store.store(event, { origin: "webhook" })));
      expect(sent).toEqual(["evalsha", "evalsha"]);
      ids.push(one.id, ...twenty.map((event) => event.id));
    } finally {
      redis.sendCommand = send;
    }
    expect(ids).toHaveLength(21);
    for (const id of ids) {
      expect(await ledger.lookup(id)).toBe("arrived");
      for (const name of ["a", "b"]) expect(await queues.forRoute(name).getJob(jobIdFor(id))).toBeDefined();
    }
    await queues.close();
  });

  it("when an event nests deeper than JSON.stringify reaches (100,000 levels), then it is still admitted in one command, each job holding its envelope and its JSON text", async () => {
    const { queues, ledger, store } = storeOn(redis, `test-${randomUUID()}`);
    await store.store(userEvent(), { origin: "webhook" }); // the shard count read, the script loaded
    const { data: _data, ...envelope } = userEvent();
    const text = `${JSON.stringify(envelope).slice(0, -1)},"data":${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}}`;
    const deep = JSON.parse(text) as CloudEvent;
    // The premise: BullMQ's JSON.stringify of the job fails here, in this process, on its stack.
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    const sent = await commandsSentBy(redis, () => expect(store.store(deep, { origin: "webhook" })).resolves.toEqual({ status: "stored", routes: ["a", "b"] }));
    expect(sent).toEqual(["evalsha"]);
    expect(await ledger.lookup(deep.id)).toBe("arrived");
    for (const name of ["a", "b"]) {
      const job = await queues.forRoute(name).getJob(jobIdFor(deep.id));
      expect(job?.data.eventJson).toBe(text);
      expect(job?.data.event).toEqual(envelope);
    }
    await queues.close();
  });

  it("when events are admitted, then each job is the one BullMQ's own add makes: the same name, options, priority and data as a job added the long way, live or reconciled", async () => {
    const prefix = `test-${randomUUID()}`;
    const { queues, store } = storeOn(redis, prefix);
    const ledger = createEventLedger(redis, prefix, 3600);
    const longWay = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes) });
    const jobOf = async (name: string, id: string) => {
      const job = (await queues.forRoute(name).getJob(jobIdFor(id)))!;
      const state = await job.getState();
      const { event, receivedAt, ...data } = job.data;
      expect(event.id).toBe(id);
      expect(receivedAt).toBeGreaterThan(0);
      const { jobId, ...opts } = job.opts;
      expect([job.id, jobId]).toEqual([jobIdFor(id), jobIdFor(id)]);
      return { name: job.name, opts, priority: job.priority, delay: job.delay, attemptsMade: job.attemptsMade, data, state };
    };
    await store.store(userEvent(), { origin: "webhook" }); // the shard count read, the script loaded
    for (const origin of ["webhook", "reconcile"] as const) {
      const [admitted, added] = [userEvent(), userEvent()];
      const sent = await commandsSentBy(redis, () => store.store(admitted, { origin, streamId: "est_x" }));
      expect(sent).toEqual(["evalsha"]);
      await longWay.store(added, { origin, streamId: "est_x" });
      for (const name of ["a", "b"]) {
        const [one, other] = [await jobOf(name, admitted.id), await jobOf(name, added.id)];
        expect(one).toEqual(other);
        expect(one).toMatchObject({ name: "user.updated", data: { origin, streamId: "est_x" }, state: origin === "reconcile" ? "prioritized" : "waiting" });
        expect(one.opts).toMatchObject({ attempts: 3, backoff: { type: "streamkeeper" } });
      }
    }
    await queues.close();
  });

  it("when a single endpoint enforces slots (a cluster node reached directly), then the admission writes nothing and the store takes the long way: stored once, and a repeat is a duplicate", async () => {
    const cluster = await startRedisCluster(1);
    const direct = createRedis(cluster.nodes[0]!.url, "client") as Redis;
    try {
      await untilReady(direct);
      const { queues, store } = storeOn(direct, `test-${randomUUID()}`);
      const events = Array.from({ length: 5 }, () => userEvent());
      await expect(Promise.all(events.map((event) => store.store(event, { origin: "webhook" })))).resolves.toEqual(events.map(() => ({ status: "stored", routes: ["a", "b"] })));
      await expect(store.store(events[0]!, { origin: "webhook" })).resolves.toEqual({ status: "duplicate", routes: [] });
      for (const name of ["a", "b"]) expect(await queues.forRoute(name).getJobCounts("wait")).toEqual({ wait: 5 });
      await queues.close();
    } finally {
      direct.disconnect();
      await cluster.stop();
    }
  });
});

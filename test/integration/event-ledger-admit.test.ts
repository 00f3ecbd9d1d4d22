import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { outboxEventOf, outboxFields, parseArchiveRecord } from "../../src/archive/archive-record.js";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { archiveOutboxKey } from "../../src/archive/archive-outbox.js";
import type { EventRecord as ArchiveEventRecord } from "../../src/archive/archive-record.js";
import type { Route } from "../../src/routes/route.js";
import { createAdmission, type Admit } from "../../src/queue/admission.js";
import { createDeliveryQueues, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger, type EventLedger } from "../../src/queue/event-ledger.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { ledgerKeys } from "../helpers/ledger-keys.js";

const route = (name: string): Route => ({ name, match: ["*"], url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 3, concurrency: 1 });

// The ledger's `admit` (event-ledger.ts), in this process, through the admission that
// builds its jobs (admission.ts): what one round trip stores, and what it leaves alone.
describe("event ledger: an admission in one step", () => {
  const redis = createRedis(inject("redisUrl"), "client") as Redis;
  const prefix = `test-${randomUUID()}`;
  const outboxKey = archiveOutboxKey(prefix);
  let queues: DeliveryQueues;
  let ledger: EventLedger;
  let admit: Admit;
  const waiting = async (name: string) => (await queues.forRoute(name).getJobCounts("wait")).wait;
  // Each entry read as the archive writer reads it: its record, and the event's text apart.
  const outbox = async () => (await redis.xrange(outboxKey, "-", "+")).map(([, fields]) => parseArchiveRecord(fields[1], fields[3]));

  beforeAll(async () => {
    await untilReady(redis);
    queues = createDeliveryQueues(redis, prefix, [route("a"), route("b")], { ageSeconds: 60, count: 1000 });
    ledger = createEventLedger(redis, prefix, 600, 8);
    admit = createAdmission({ ledger, queues, outbox: outboxKey ? { key: outboxKey, fieldsOf: outboxFields } : undefined });
  });
  afterAll(async () => {
    for (const name of ["a", "b"]) await queues.forRoute(name).obliterate({ force: true });
    await redis.del(outboxKey, ...(await ledgerKeys(redis, prefix)));
    await queues.close();
    redis.disconnect();
  });

  it("when a new id is admitted for two routes with its archive record, then each route has its job, the outbox the record once, and the ledger the arrival with its origin, stream, type and routes; a second admission of the id is a duplicate that adds nothing", async () => {
    const event = userEvent();
    const receivedAt = Date.now();
    const record: ArchiveEventRecord = { kind: "event", event, origin: "pull", streamId: "est_9", receivedAt, routes: ["a", "b"] };
    await expect(admit(event, ["a", "b"], { origin: "pull", streamId: "est_9", receivedAt }, record)).resolves.toBe("stored");
    for (const name of ["a", "b"]) expect((await queues.forRoute(name).getJob(jobIdFor(event.id)))?.data.event).toEqual(event);
    expect(await outbox()).toEqual([outboxEventOf(record)]);
    expect(await ledger.get(event.id)).toEqual({
      eventId: event.id,
      receivedAt,
      origin: "pull",
      streamId: "est_9",
      type: event.type,
      routes: ["a", "b"],
      duplicates: 0,
      lastDuplicateAt: undefined,
      replays: 0,
      deliveredAt: {},
      staleAt: {},
      filtered: [],
    });
    // A route whose filter left it out (routes/route-chooser.ts): marked apart, never one of its routes.
    await ledger.markFiltered(event.id, "c", receivedAt);
    expect(await ledger.get(event.id)).toMatchObject({ routes: ["a", "b"], filtered: ["c"], deliveredAt: {} });
    expect(await ledger.lookup(event.id)).toBe("arrived");

    await expect(admit(event, ["a", "b"], { origin: "webhook", receivedAt: receivedAt + 7 }, { ...record, receivedAt: receivedAt + 7 })).resolves.toBe("duplicate");
    expect([await waiting("a"), await waiting("b")]).toEqual([1, 1]);
    expect(await outbox()).toHaveLength(1);
    expect(await ledger.get(event.id)).toMatchObject({ receivedAt, origin: "pull", duplicates: 1, lastDuplicateAt: receivedAt + 7 });
  });

  it("when an event with no stream and no archive record is admitted, then it is stored with no stream and nothing in the outbox", async () => {
    const event = userEvent();
    const before = (await outbox()).length;
    await expect(admit(event, ["b"], { origin: "webhook", receivedAt: Date.now() })).resolves.toBe("stored");
    const record = await ledger.get(event.id);
    expect(record).toMatchObject({ origin: "webhook", routes: ["b"] });
    expect(record?.streamId).toBeUndefined();
    expect(await queues.forRoute("b").getJob(jobIdFor(event.id))).toBeDefined();
    expect(await queues.forRoute("a").getJob(jobIdFor(event.id))).toBeUndefined();
    expect(await outbox()).toHaveLength(before);
  });

  it("when 20 new ids are admitted in one turn, every other one with its archive record, then they reach Redis as one command, each is stored, and the outbox holds exactly the records given", async () => {
    await admit(userEvent(), ["a"], { origin: "webhook", receivedAt: Date.now() }); // the script loaded, the shard count read
    const before = (await outbox()).length;
    const events = Array.from({ length: 20 }, () => userEvent());
    const records = events.map((event, index): ArchiveEventRecord | undefined => (index % 2 ? { kind: "event", event, origin: "webhook", receivedAt: 1, routes: ["a"] } : undefined));
    // What this process sends, counted at the connection (commands a script runs in Redis are not sent).
    const sent: string[] = [];
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: Parameters<typeof send>[0], stream?: Parameters<typeof send>[1]) => (sent.push(command.name), send(command, stream))) as typeof redis.sendCommand;
    try {
      expect(await Promise.all(events.map((event, index) => admit(event, ["a"], { origin: "webhook", receivedAt: Date.now() }, records[index])))).toEqual(events.map(() => "stored"));
    } finally {
      redis.sendCommand = send;
    }
    expect(sent).toEqual(["evalsha"]);
    expect(await Promise.all(events.map((event) => ledger.lookup(event.id)))).toEqual(events.map(() => "arrived"));
    // Each admission's outbox entry is its own: one without a record writes none, not another's.
    expect((await outbox()).slice(before)).toEqual(records.filter((record) => record !== undefined).map(outboxEventOf));
  });

  it("when the ledger holds only a route's delivery of the id, then the admission answers recheck and writes nothing: no job, no outbox entry, no arrival", async () => {
    const event = userEvent();
    await ledger.markDelivered(event.id, "a", Date.now());
    const before = (await outbox()).length;
    const record: ArchiveEventRecord = { kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: ["a", "b"] };
    await expect(admit(event, ["a", "b"], { origin: "webhook", receivedAt: record.receivedAt }, record)).resolves.toBe("recheck");
    for (const name of ["a", "b"]) expect(await queues.forRoute(name).getJob(jobIdFor(event.id))).toBeUndefined();
    expect(await outbox()).toHaveLength(before);
    expect(await ledger.lookup(event.id)).toBe("delivered_only");
  });

  it("when no record holds the id but a dead letter of an earlier arrival (older than the TTL) holds its job id on route b, then the admission answers held and writes nothing: no job on a, no outbox entry, no arrival, the dead letter as it was", async () => {
    // Queues of their own: route b's only job is the one made a dead letter here.
    const ownPrefix = `test-${randomUUID()}`;
    const own = createDeliveryQueues(redis, ownPrefix, [route("a"), route("b")], { ageSeconds: 60, count: 1000 });
    const ownLedger = createEventLedger(redis, ownPrefix, 600, 8);
    const event = userEvent();
    await own.forRoute("b").add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id), attempts: 1 });
    const worker = new Worker(deliveryQueueName("b"), null, { connection: createRedis(inject("redisUrl"), "worker"), prefix: deliveryQueueBullPrefix(ownPrefix, "b") });
    await (await worker.getNextJob("test"))!.moveToFailed(new Error("downstream answered 400"), "test");
    await worker.close();
    const before = (await outbox()).length;
    const record: ArchiveEventRecord = { kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: ["a", "b"] };
    await expect(createAdmission({ ledger: ownLedger, queues: own, outbox: { key: outboxKey, fieldsOf: outboxFields } })(event, ["a", "b"], { origin: "webhook", receivedAt: record.receivedAt }, record)).resolves.toBe("held");
    expect(await own.forRoute("a").getJob(jobIdFor(event.id))).toBeUndefined();
    expect(await own.forRoute("b").getJobCounts("failed", "wait")).toEqual({ failed: 1, wait: 0 });
    expect(await outbox()).toHaveLength(before);
    expect(await ownLedger.lookup(event.id)).toBe("absent");
    expect(await ledgerKeys(redis, ownPrefix)).toEqual([]);
    for (const name of ["a", "b"]) await own.forRoute(name).obliterate({ force: true });
    await own.close();
  });

  it("when the script refuses an admission (a bucket's route dictionary full), then the caller gets the error, nothing is claimed, and the next admissions still go in one step", async () => {
    // A ledger of its own: the 255 route names it leaves in its bucket would refuse the other tests' routes.
    const ownPrefix = `test-${randomUUID()}`;
    const own = createEventLedger(redis, ownPrefix, 600, 1);
    const tooMany = Array.from({ length: 256 }, (_, index) => `route-${index}`);
    const arrival = { receivedAt: Date.now(), origin: "webhook" as const, type: "user.updated", routes: tooMany };
    await expect(own.admit("evt_full", arrival, [])).rejects.toThrow(/more than 255 route names/);
    expect(await own.lookup("evt_full")).toBe("absent");
    // No job to add: a route list of none. Stored in the one step, not sent the long way.
    await expect(own.admit("evt_next", { ...arrival, routes: [] }, [])).resolves.toBe("stored");
    await expect(own.admit("evt_next", { ...arrival, routes: [] }, [])).resolves.toBe("duplicate");
    expect(await own.has("evt_next")).toBe(true);
    await redis.del(...(await ledgerKeys(redis, ownPrefix)));
  });
});

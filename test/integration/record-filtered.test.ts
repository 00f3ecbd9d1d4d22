import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, inject, it } from "vitest";
import { dispatchTotal } from "../../src/metrics/registry.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createFilteredRecorder } from "../../src/queue/record-filtered.js";
import { closeRedis, createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";

const redisUrl = inject("redisUrl");

async function filteredCount(route: string): Promise<number> {
  return (await dispatchTotal.get()).values.find((value) => value.labels.route === route && value.labels.outcome === "filtered")?.value ?? 0;
}

/**
 * What an event that routes' filters left out leaves behind (queue/record-filtered.ts): a
 * count per route, the ledger's mark per route, a debug line; and a warning when the
 * ledger cannot take the mark. Never silent.
 */
describe("recording an event the filters left out", () => {
  let redis: RedisClient | undefined;
  afterEach(() => (redis ? closeRedis(redis) : undefined));

  it("when routes filtered an event, then each is counted and marked in the ledger, and one debug line names the event, its type and the routes", async () => {
    redis = createRedis(redisUrl, "client");
    await untilReady(redis);
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 600);
    const { logger, lines } = capturedLogger("debug");
    const event = userEvent();
    const [paying, crm] = [`paying-${randomUUID()}`, `crm-${randomUUID()}`];
    const receivedAt = Date.now();
    await ledger.claim(event.id, { receivedAt, origin: "webhook", type: event.type, routes: [paying, crm] }, false);

    createFilteredRecorder(ledger, logger)(event, [paying, crm], receivedAt);

    expect([await filteredCount(paying), await filteredCount(crm)]).toEqual([1, 1]);
    await expect.poll(async () => (await ledger.get(event.id))?.filtered.sort()).toEqual([paying, crm].sort());
    expect(lines).toEqual([expect.objectContaining({ level: 20, eventId: event.id, type: event.type, routes: [paying, crm], msg: "event left out by these routes' filters (outcome filtered): no delivery job" })]);
    // Above debug: counted and marked all the same, no line.
    const quiet = capturedLogger("info");
    createFilteredRecorder(ledger, quiet.logger)(event, [paying], receivedAt);
    expect(await filteredCount(paying)).toBe(2);
    expect(quiet.lines).toEqual([]);
  });

  it("when the ledger cannot take the mark, then it is still counted, and a warning names the event and the route", async () => {
    redis = createRedis(redisUrl, "client");
    await untilReady(redis);
    const ledger = createEventLedger(redis, `test-${randomUUID()}`, 600);
    const { logger, lines } = capturedLogger("info");
    const event = userEvent();
    const route = `paying-${randomUUID()}`;
    await closeRedis(redis);
    redis = undefined;

    createFilteredRecorder(ledger, logger)(event, [route], Date.now());

    expect(await filteredCount(route)).toBe(1);
    await expect.poll(() => lines).toEqual([expect.objectContaining({ level: 40, eventId: event.id, route, msg: "could not mark the event filtered in the ledger; GET /admin/events lacks it" })]);
  });
});

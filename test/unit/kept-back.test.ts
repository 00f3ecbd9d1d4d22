import { describe, expect, it } from "vitest";
import type { AttemptRecord, OutboxEvent } from "../../src/archive/archive-record.js";
import { createKeptBack, type ReadRecord } from "../../src/archive/kept-back.js";

const event = (id: string, routes: string[], filtered?: string[]): OutboxEvent => ({ kind: "event", id, type: "user.updated", stream: null, entity: null, origin: "webhook", receivedAt: 1000, routes, ...(filtered ? { filtered } : {}), eventText: "{}" });
const attempt = (eventId: string, route: string): AttemptRecord => ({ kind: "attempt", eventId, receivedAt: 1000, route, key: `${eventId}:1`, at: 1020, status: 200, outcome: "delivered" });
let next = 0;
const read = (record: OutboxEvent | AttemptRecord, readAt: number): ReadRecord => ({ id: `${++next}-0`, record, readAt });
const ids = (reads: ReadRecord[]) => reads.map(({ record }) => (record.kind === "event" ? record.id : `${record.eventId}>${record.route}`));

describe("kept-back: which records the archive writer keeps for their event's deliveries", () => {
  it("when an event's routes have no attempt yet, then it is kept until each has one, and goes with them", () => {
    const kept = createKeptBack(1000, 10);
    expect(ids(kept.take([read(event("a", ["crm", "erp"]), 0), read(attempt("a", "crm"), 0)], 0))).toEqual([]);
    expect(kept.size).toBe(1);
    expect(ids(kept.take([read(attempt("a", "erp"), 50)], 50))).toEqual(["a", "a>crm", "a>erp"]);
    expect(kept.size).toBe(0);
  });

  it("when an event has no route, or only routes that filtered it out, then it is written at once", () => {
    const kept = createKeptBack(1000, 10);
    expect(ids(kept.take([read(event("u", []), 0), read(event("f", ["crm"], ["crm"]), 0)], 0))).toEqual(["u", "f"]);
  });

  it("when a route filtered it out and another did not, then it waits for the other's attempt only", () => {
    const kept = createKeptBack(1000, 10);
    expect(ids(kept.take([read(event("a", ["crm", "erp"], ["erp"]), 0)], 0))).toEqual([]);
    expect(ids(kept.take([read(attempt("a", "crm"), 10)], 10))).toEqual(["a", "a>crm"]);
  });

  it("when holdMs passes without its attempts, then it is written with those it has, oldest first, and a younger one stays", () => {
    const kept = createKeptBack(1000, 10);
    kept.take([read(event("old", ["crm", "erp"]), 0), read(attempt("old", "crm"), 0)], 0);
    kept.take([read(event("young", ["crm"]), 600)], 600);
    expect(ids(kept.take([], 999))).toEqual([]);
    expect(ids(kept.take([], 1000))).toEqual(["old", "old>crm"]);
    expect(kept.size).toBe(1);
    // Its attempt after that: written at once, as a row of its own.
    expect(ids(kept.take([read(attempt("old", "erp"), 1001)], 1001))).toEqual(["old>erp"]);
  });

  it("when maxHeld events are kept, then the next is written at once", () => {
    const kept = createKeptBack(1000, 2);
    expect(ids(kept.take([read(event("a", ["crm"]), 0), read(event("b", ["crm"]), 0), read(event("c", ["crm"]), 0)], 0))).toEqual(["c"]);
  });

  it("when holdMs is 0, or it was cleared, then nothing is kept", () => {
    expect(ids(createKeptBack(0, 10).take([read(event("a", ["crm"]), 0)], 0))).toEqual(["a"]);
    const kept = createKeptBack(1000, 10);
    kept.take([read(event("a", ["crm"]), 0)], 0);
    kept.clear();
    expect(kept.size).toBe(0);
    expect(ids(kept.take([read(attempt("a", "crm"), 5)], 5))).toEqual(["a>crm"]);
  });
});

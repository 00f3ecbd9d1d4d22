import { describe, expect, it } from "vitest";
import { outboxAttemptsFields, outboxFields, parseOutboxEntry, type AttemptRecord } from "../../src/archive/archive-record.js";
import { createEntryTally } from "../../src/archive/entry-tally.js";
import type { ReadRecord } from "../../src/archive/kept-back.js";
import { userEvent } from "../helpers/fixtures.js";

const attempt = (n: number): AttemptRecord => ({ kind: "attempt", eventId: "evt_1", receivedAt: 1000, route: "crm", key: `evt_1:${n}`, at: 1000 + n, status: 200, outcome: "delivered" });

describe("an outbox entry's records", () => {
  it("when attempts share an entry, then each reads back as it was; an event entry and an earlier single attempt's entry read as one record", () => {
    expect(parseOutboxEntry(outboxAttemptsFields([attempt(1), attempt(2)]))).toEqual([attempt(1), attempt(2)]);
    expect(parseOutboxEntry(outboxFields(attempt(3)))).toEqual([attempt(3)]);
    const event = userEvent();
    expect(parseOutboxEntry(outboxFields({ kind: "event", event, origin: "webhook", receivedAt: 1000, routes: ["crm"] }))).toMatchObject([{ kind: "event", id: event.id, routes: ["crm"], eventText: JSON.stringify(event) }]);
  });

  it("when an entry's attempts cannot be read, then each unreadable one is poison with why, and the others are kept", () => {
    const { key: _key, ...keyless } = attempt(2);
    expect(parseOutboxEntry(["a", JSON.stringify([attempt(1), keyless, { kind: "event", receivedAt: 1, routes: [], origin: "webhook" }, null, attempt(4)])])).toEqual([
      attempt(1),
      { poison: "an attempt record without its event id, route or key" },
      { poison: "an entry's attempt is not an attempt record" },
      { poison: "an entry's attempt is not an attempt record" },
      attempt(4),
    ]);
    expect(parseOutboxEntry(["a", "[{"])).toEqual([{ poison: "the entry's attempts are not JSON" }]);
    expect(parseOutboxEntry(["a", "[]"])).toEqual([{ poison: "the entry's attempts are not a list of records" }]);
    expect(parseOutboxEntry(["a", JSON.stringify(attempt(1))])).toEqual([{ poison: "the entry's attempts are not a list of records" }]);
    expect(parseOutboxEntry(["x", "{}"])).toEqual([{ poison: "the entry has no record field" }]);
  });
});

describe("the tally of an entry's records written", () => {
  const read = (id: string, n: number): ReadRecord => ({ id, record: attempt(n), readAt: 0 });

  it("when an entry's records are written over several batches, then it is done once, with its last", () => {
    const tally = createEntryTally();
    tally.read([read("1-0", 1), read("1-0", 2), read("1-0", 3), read("2-0", 4)]);
    expect(tally.written([read("1-0", 1), read("2-0", 4)])).toEqual(["2-0"]);
    expect(tally.written([read("1-0", 2)])).toEqual([]);
    expect(tally.written([read("1-0", 3)])).toEqual(["1-0"]);
  });

  it("when the tally is cleared and the entry read again, then it counts from the new read only", () => {
    const tally = createEntryTally();
    tally.read([read("1-0", 1), read("1-0", 2)]);
    tally.clear();
    tally.read([read("1-0", 1), read("1-0", 2)]);
    expect(tally.written([read("1-0", 1), read("1-0", 2)])).toEqual(["1-0"]);
  });
});

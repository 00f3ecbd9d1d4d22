import { describe, expect, it } from "vitest";
import { createEventLog, type LogEvent } from "../../../src/emulator/event-log.js";

const event = (id: string, time: string): LogEvent => ({ id, source: "urn:test", specversion: "1.0", type: "user.created", time, data: {}, a0tenant: "t" });

describe("the emulator's event log", () => {
  it("when events are appended, then each has an opaque offset that names its place, and reading after one gives the rest in order", () => {
    const log = createEventLog();
    log.append(event("evt_1", "2026-11-25T12:00:00Z"));
    log.append(event("evt_2", "2026-11-25T12:00:01Z"));
    log.append(event("evt_3", "2026-11-25T12:00:02Z"));
    const first = log.after(0, 10);
    expect(first.map((entry) => JSON.parse(entry.data).event.id)).toEqual(["evt_1", "evt_2", "evt_3"]);
    expect(first.every((entry) => JSON.parse(entry.data).offset === entry.offset)).toBe(true);
    expect(first[0]!.offset).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(log.after(log.seqOf(first[0]!.offset)!, 10).map((entry) => entry.seq)).toEqual([2, 3]);
    expect(log.seqOf("bm90IGFuIG9mZnNldA==")).toBeUndefined();
  });

  it("when a time is given, then reading starts at the first event at or after it", () => {
    const log = createEventLog();
    log.append(event("evt_1", "2026-11-25T12:00:00Z"));
    log.append(event("evt_2", "2026-11-25T12:00:05Z"));
    expect(log.after(log.seqBefore(Date.parse("2026-11-25T12:00:03Z")), 10).map((entry) => entry.seq)).toEqual([2]);
  });

  it("when events pass the retention, then an offset before them is no longer held (410) while later ones are", () => {
    let now = Date.parse("2026-11-25T12:00:10Z");
    const log = createEventLog({ retentionMs: 5000, now: () => now });
    log.append(event("evt_1", "2026-11-25T12:00:00Z"));
    log.append(event("evt_2", "2026-11-25T12:00:08Z"));
    expect(log.stillHeld(0)).toBe(false);
    expect(log.stillHeld(1)).toBe(true);
    expect(log.after(1, 10).map((entry) => entry.seq)).toEqual([2]);
    now += 10_000;
    expect(log.stillHeld(1)).toBe(false);
    expect(log.after(2, 10)).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { latePriority, reconcilePriority, replayPriority } from "../../../src/queue/delivery-job.js";
import { isLate, laneOfPriority, priorityOn } from "../../../src/queue/lane.js";
import { userEvent } from "../../helpers/fixtures.js";

const windowMs = 300_000;
const arrival = Date.parse("2026-03-01T12:00:00Z");
const at = (msBefore: number) => userEvent({ time: new Date(arrival - msBefore).toISOString() });

describe("lanes", () => {
  it("when an event's time is more than the live window before its arrival, then it is late; at the window or without a time it is live", () => {
    expect(isLate(at(windowMs + 1).time, arrival, windowMs)).toBe(true);
    expect(isLate(at(windowMs).time, arrival, windowMs)).toBe(false);
    // A clock ahead of ours: not late.
    expect(isLate(at(-60_000).time, arrival, windowMs)).toBe(false);
    expect(isLate(undefined, arrival, windowMs)).toBe(false);
    expect(isLate("not a time", arrival, windowMs)).toBe(false);
  });

  it("when the priorities are ordered, then live goes first, then late, reconcile, replay", () => {
    expect(priorityOn(windowMs, at(0), { origin: "webhook", receivedAt: arrival })).toBeUndefined();
    expect(priorityOn(windowMs, at(86_400_000), { origin: "webhook", receivedAt: arrival })).toBe(latePriority);
    expect(priorityOn(windowMs, at(86_400_000), { origin: "pull", receivedAt: arrival })).toBe(latePriority);
    // A reconciled event waits behind live ones whatever its time.
    expect(priorityOn(windowMs, at(0), { origin: "reconcile", receivedAt: arrival })).toBe(reconcilePriority);
    expect(0 < latePriority && latePriority < reconcilePriority && reconcilePriority < replayPriority).toBe(true);
  });

  it("when a job has a priority, then it waits in the late lane; without one it is live", () => {
    expect(laneOfPriority(undefined)).toBe("live");
    expect(laneOfPriority(0)).toBe("live");
    expect([latePriority, reconcilePriority, replayPriority].map(laneOfPriority)).toEqual(["late", "late", "late"]);
  });
});

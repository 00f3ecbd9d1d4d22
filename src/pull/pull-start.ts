import { readTimeInput, timeInputForms } from "../time/parse-time-input.js";

/** Where a service with no stored offset begins reading the tenant's log (PULL_START). */
export type PullStart = { kind: "now" } | { kind: "ago"; ms: number } | { kind: "at"; time: Date };

export const pullStartAccepted = `give now, or ${timeInputForms}`;

/** `now`, a duration back (`7d`), a date or an ISO 8601 time (parse-time-input.ts); undefined when it is none of them. */
export function parsePullStart(value: string): PullStart | undefined {
  if (value.trim() === "now") return { kind: "now" };
  const read = readTimeInput(value);
  if (!read) return undefined;
  return read.kind === "ago" ? read : { kind: "at", time: new Date(read.ms) };
}

/** The time to read from for a start, or undefined for `now` (the tenant's own default). */
export function startTime(start: PullStart, now: number): Date | undefined {
  if (start.kind === "now") return undefined;
  return start.kind === "ago" ? new Date(now - start.ms) : start.time;
}

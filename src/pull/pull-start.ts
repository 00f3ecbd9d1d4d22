/** Where a service with no stored offset begins reading the tenant's log (PULL_START). */
export type PullStart = { kind: "now" } | { kind: "ago"; ms: number } | { kind: "at"; time: Date };

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export const pullStartAccepted = "give now, a duration such as 90m, 6h or 7d, or a time in ISO 8601 such as 2025-09-08T06:35:17Z";

/** `now`, a duration back (`7d`) or an ISO 8601 time; undefined when it is none of them. */
export function parsePullStart(value: string): PullStart | undefined {
  const text = value.trim();
  if (text === "now") return { kind: "now" };
  const duration = /^(\d+)([smhdw])$/.exec(text);
  if (duration) return { kind: "ago", ms: Number(duration[1]) * units[duration[2]!]! };
  if (/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) {
    const time = Date.parse(text);
    if (!Number.isNaN(time)) return { kind: "at", time: new Date(time) };
  }
  return undefined;
}

/** The time to read from for a start, or undefined for `now` (the tenant's own default). */
export function startTime(start: PullStart, now: number): Date | undefined {
  if (start.kind === "now") return undefined;
  return start.kind === "ago" ? new Date(now - start.ms) : start.time;
}

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** The forms a time is given in, said the same way by every command, setting and the operator view. */
export const timeInputForms = "a duration back from now (90m, 6h, 7d), a date (2026-11-25: its midnight UTC) or a time in ISO 8601 (2026-11-25T06:35:17Z)";

/** A time as a person gives it: how far back it is, or when it is; undefined when it is neither. */
export type TimeInput = { kind: "ago"; ms: number } | { kind: "at"; ms: number };

/**
 * The one reader of a time a person types (the CLI's `--since`/`--until`, `PULL_START`, and
 * the operator view's fields through the admin API): a duration back from now (`90m`, `2h`,
 * `7d`, `2w`), a date (`2026-12-07`, midnight UTC, as `Date.parse` reads a date alone) or an
 * ISO 8601 time (without an offset: the local time of the one reading it).
 */
export function readTimeInput(value: string): TimeInput | undefined {
  const text = value.trim();
  const duration = /^(\d+)([smhdw])$/.exec(text);
  if (duration) return { kind: "ago", ms: Number(duration[1]) * units[duration[2]!]! };
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : { kind: "at", ms };
}

/** The time `value` names, in ms since the epoch, `now` being the moment durations count back from; undefined when it names none. */
export function parseTimeInput(value: string, now: number): number | undefined {
  const read = readTimeInput(value);
  if (!read) return undefined;
  return read.kind === "ago" ? now - read.ms : read.ms;
}

import { CliError } from "./cli-error.js";

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** The forms every command's time flags take, as their errors name them. */
export const acceptedTimes = "give a duration back from now (90m, 6h, 7d), a date (2026-11-25: its midnight UTC) or a time in ISO 8601 (2026-11-25T06:35:17Z)";

/**
 * A time given on the command line (`--since`, `--until` of every command): a duration back
 * from `now` (`30m`, `2h`, `7d`, `2w`), a date (`2026-11-25`, its midnight UTC, as
 * `Date.parse` reads a bare date) or an ISO 8601 time; else exit 2 naming the accepted forms.
 */
export function parseWhen(flag: string, value: string, now = Date.now()): Date {
  const duration = /^(\d+)([smhdw])$/.exec(value.trim());
  if (duration) return new Date(now - Number(duration[1]) * units[duration[2]!]!);
  if (/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) {
    const time = Date.parse(value.trim());
    if (!Number.isNaN(time)) return new Date(time);
  }
  throw new CliError(`${flag} ${JSON.stringify(value)}: ${acceptedTimes}`, 2);
}

/** parseWhen, as the ISO 8601 string the admin API takes. */
export function parseCliTime(flag: string, value: string, now = Date.now()): string {
  return parseWhen(flag, value, now).toISOString();
}

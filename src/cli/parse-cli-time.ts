import { parseTimeInput, timeInputForms } from "../time/parse-time-input.js";
import { CliError } from "./cli-error.js";

/** The forms every command's time flags take, as their errors name them. */
export const acceptedTimes = `give ${timeInputForms}`;

/**
 * A time given on the command line (`--since`, `--until` of every command), read by
 * parse-time-input.ts (the service's admin API and PULL_START read it there too): a duration
 * back from `now` (`30m`, `2h`, `7d`, `2w`), a date (`2026-11-25`, its midnight UTC) or an
 * ISO 8601 time; else exit 2 naming the accepted forms.
 */
export function parseWhen(flag: string, value: string, now = Date.now()): Date {
  const time = parseTimeInput(value, now);
  if (time === undefined) throw new CliError(`${flag} ${JSON.stringify(value)}: ${acceptedTimes}`, 2);
  return new Date(time);
}

/** parseWhen, as the ISO 8601 string the admin API takes. */
export function parseCliTime(flag: string, value: string, now = Date.now()): string {
  return parseWhen(flag, value, now).toISOString();
}

import { parseTimeInput, timeInputForms } from "../parse-time-input.js";
import { CliError } from "./cli-error.js";

/**
 * A time given on the command line (parse-time-input.ts: `90m`, `2h`, `7d`, `2026-12-07`,
 * `2026-11-25T06:00:00Z`), as an ISO 8601 string the admin API takes; else exit 2 naming the forms.
 */
export function parseCliTime(option: string, value: string, now = Date.now()): string {
  const time = parseTimeInput(value, now);
  if (time === undefined) throw new CliError(`${option} ${JSON.stringify(value)}: give ${timeInputForms}`, 2);
  return new Date(time).toISOString();
}

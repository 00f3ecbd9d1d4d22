import { CliError } from "./cli-error.js";

const units: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A time given on the command line: ISO 8601 (`2026-11-25T06:00:00Z`) or a duration back
 * from now (`30m`, `2h`, `7d`), as an ISO 8601 string the admin API takes.
 */
export function parseCliTime(option: string, value: string, now = Date.now()): string {
  const relative = /^(\d+)([smhd])$/.exec(value.trim());
  if (relative) return new Date(now - Number(relative[1]) * units[relative[2]!]!).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value.trim()) && Number.isFinite(Date.parse(value))) return new Date(value).toISOString();
  throw new CliError(`${option} ${JSON.stringify(value)}: give a time in ISO 8601 with its offset (2026-11-25T06:00:00Z) or a duration back from now (30m, 2h, 7d)`, 2);
}

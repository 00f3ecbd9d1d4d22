import { pino } from "pino";
import { createLogger, type Logger } from "../logging/logger.js";

let verbose = false;

/** `--verbose` (main.ts sets it before a command's action runs). */
export function showLogs(on: boolean): void {
  verbose = on;
}

/**
 * A command's logger: silent unless --verbose, then at LOG_LEVEL on stderr. A command's
 * output is its result lines (stdout) and its one-line errors and notes (stderr); JSON
 * log lines mixed into either made both hard to read and to parse.
 */
export function cliLogger(level: string): Logger {
  return createLogger(verbose ? level : "silent", pino.destination({ dest: 2, sync: true }));
}

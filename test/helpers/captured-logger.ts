import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/logging/logger.js";

export interface CapturedLogger {
  logger: Logger;
  /** every line so far, parsed */
  lines: Array<Record<string, unknown>>;
}

/** A real pino logger (the service's, redaction included) writing into memory. */
export function capturedLogger(level = "info"): CapturedLogger {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, destination), lines };
}

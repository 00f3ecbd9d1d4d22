import { pino, type Logger } from "pino";
import pinoPretty from "pino-pretty";
import { isRedisUnreachable } from "../errors/redis-unreachable.js";

export type { Logger };

/** `pretty`: one readable line per entry, local time; `json`: JSON lines, for a collector. */
export type LogFormat = "pretty" | "json";

/** LOG_FORMAT when set, else by where the lines go: readable on a terminal, JSON lines anywhere else (a pipe, a file, a collector). */
export function logFormatOf(setting: LogFormat | undefined, toTerminal: boolean): LogFormat {
  return setting ?? (toTerminal ? "pretty" : "json");
}

/**
 * JSON-line logs, or with `format` "pretty" (and no `destination`) readable lines on stdout
 * through pino-pretty, after the same redaction. Credentials are redacted by path wherever they could appear:
 * request headers, configuration objects and tenant API errors. An error that only says
 * Redis cannot be reached is logged without its stack wherever it is logged: the outage is
 * an expected condition, said once by the process (redis/watch-redis-reachability.ts), and
 * a library's stack would explain nothing more.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, format: LogFormat = "json"): Logger {
  return pino(
    {
      level,
      base: { service: "streamkeeper" },
      serializers: {
        err: (error: unknown) => {
          const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
          if (!isRedisUnreachable(error)) return serialized;
          const { stack: _stack, ...rest } = serialized;
          return rest;
        },
      },
      redact: {
        paths: [
          "req.headers.authorization",
          "req.headers.cookie",
          'req.headers["x-api-key"]',
          "headers.authorization",
          "*.password",
          "*.token",
          "*.secret",
          "*.client_secret",
          "*.clientSecret",
          "*.access_token",
          "*.headerValue",
          "*.header_value",
        ],
        censor: "[redacted]",
      },
    },
    destination ?? (format === "pretty" ? prettyLines() : undefined),
  );
}

/** One line per entry: local time, level, message, then the entry's fields; synchronous, as pino's own stdout. */
function prettyLines(): pino.DestinationStream {
  return pinoPretty({ translateTime: "SYS:yyyy-mm-dd HH:MM:ss.l", ignore: "pid,hostname,service", singleLine: true, colorize: process.stdout.isTTY === true, sync: true, destination: 1 });
}

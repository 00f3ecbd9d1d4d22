import { pino, type Logger } from "pino";
import { isRedisUnreachable } from "./redis-unreachable.js";

export type { Logger };

/**
 * JSON-line logs. Credentials are redacted by path wherever they could appear:
 * request headers, configuration objects and tenant API errors. An error that only says
 * Redis cannot be reached is logged without its stack wherever it is logged: the outage is
 * an expected condition, said once by the process (redis/watch-redis-reachability.ts), and
 * a library's stack would explain nothing more.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
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
    destination,
  );
}

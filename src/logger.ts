import { pino, type Logger } from "pino";

export type { Logger };

/**
 * JSON-line logs. Credentials are redacted by path wherever they could appear:
 * request headers, configuration objects and tenant API errors.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "streamkeeper" },
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

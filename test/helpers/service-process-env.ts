import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { testCredentials } from "./credentials.js";

export { testCredentials };

/**
 * The settings every test's service starts with, spawned or in-process: the run's Redis, a
 * fresh QUEUE_PREFIX, the test's webhook credentials, warnings only, and a route that
 * answers nothing (the discard port on loopback: connection refused) unless `env` gives
 * ROUTES_FILE or DOWNSTREAM_URL, since the service refuses to start without one. The archive
 * is off unless `env` sets ARCHIVE=on (with ARCHIVE_DATABASE_URL from archive-database.ts),
 * so no test starts an embedded Postgres by accident. `env` adds or overrides any setting.
 */
export function serviceProcessEnv(env: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: `test-${randomUUID()}`,
    WEBHOOK_USERNAME: testCredentials.username,
    WEBHOOK_PASSWORD: testCredentials.password,
    LOG_LEVEL: "warn",
    ARCHIVE: "off",
    ...(env.ROUTES_FILE || env.DOWNSTREAM_URL ? {} : { DOWNSTREAM_URL: "http://127.0.0.1:9/" }),
    ...env,
  };
}

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startService, type Role, type Service } from "../../src/app.js";
import { loadConfig, type Config } from "../../src/config/config.js";
import { createLogger, type Logger } from "../../src/logging/logger.js";
import { serviceProcessEnv, testCredentials } from "./service-process-env.js";
import { webhookAuthorization } from "./credentials.js";

export { testCredentials };

export interface TestService extends Service {
  config: Config;
  /** POSTs to the public ingress with the test's basic credentials. */
  post(path: string, body: string, headers?: Record<string, string>): Promise<Response>;
}

/**
 * Starts the real service in-process on ports 0 against the run's Redis, with a fresh
 * queue prefix. `env` overrides any setting (e.g. DOWNSTREAM_URL, WEBHOOK_AUTH); a `logger`
 * replaces the silent one (a test that reads the logs). `beyondSchema` sets values the
 * schema refuses, after it checked the rest: a test that waits out a time (a
 * DEDUPE_TTL_SECONDS of 2 s) without waiting an hour.
 */
export async function startTestService(env: Record<string, string> = {}, role: Role = "all", logger?: Logger, beyondSchema: Partial<Config["env"]> = {}): Promise<TestService> {
  const dataDir = await mkdtemp(join(tmpdir(), "sk-data-"));
  const loaded = loadConfig(
    serviceProcessEnv({
      PORT: "0",
      HOST: "127.0.0.1",
      ADMIN_PORT: "0",
      DATA_DIR: dataDir,
      LOG_LEVEL: "silent",
      SHUTDOWN_TIMEOUT_MS: "2000",
      DISPATCH_BACKOFF_BASE_MS: "20",
      ...env,
    }),
  );
  const config: Config = { ...loaded, env: { ...loaded.env, ...beyondSchema } };
  const service = await startService(config, logger ?? createLogger(config.env.LOG_LEVEL), role).catch(async (error: unknown) => {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  });
  const authorization = webhookAuthorization;
  return {
    ...service,
    // The data folder it made goes with it (a test's own DATA_DIR is the test's to remove).
    close: () => service.close().finally(() => rm(dataDir, { recursive: true, force: true })),
    config,
    post: (path, body, headers = {}) =>
      fetch(`${service.publicUrl}${path}`, {
        method: "POST",
        body,
        headers: { authorization, "content-type": "application/json", ...headers },
      }),
  };
}

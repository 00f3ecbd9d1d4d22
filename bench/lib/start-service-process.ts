import { spawn } from "node:child_process";
import { openSync, closeSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Role } from "../../src/app.js";
import { settings } from "../../src/config.js";
import { freePort } from "../../src/queue/redis-server.js";
import { peakRssBytes, stopChild } from "./start-child.js";
import { basicAuthorization } from "../../test/helpers/credentials.js";

const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

export const benchCredentials = { username: "bench", password: "bench-webhook-password" };
export const benchAuthorization = basicAuthorization(benchCredentials.username, benchCredentials.password);

export interface ServiceOptions {
  role: Role;
  redisUrl: string;
  queuePrefix: string;
  /** DATA_DIR, also where the service's log goes (`service-<role>.log`) */
  dataDir: string;
  /** settings on top of the bench's own (DOWNSTREAM_URL, ROUTES_FILE, ...) */
  env?: Record<string, string>;
  /** write a CPU profile (`node --cpu-prof`) into this directory when the process exits */
  cpuProfileDir?: string;
}

export interface ServiceProcess {
  pid: number;
  /** the environment it runs with, for CLI commands that must reach the same Redis and tenant */
  env: Record<string, string | undefined>;
  publicUrl: string;
  adminUrl: string;
  peakRssBytes(): number | undefined;
  stop(): Promise<void>;
}

/**
 * Runs the built service (`node dist/cli/main.js start --role <role>`) as its own
 * process on loopback ports, as an operator would, and waits until /readyz answers 200.
 * Settings from the caller's environment are dropped so they cannot bend a run.
 */
export async function startServiceProcess(options: ServiceOptions): Promise<ServiceProcess> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !(key in settings)));
  const env = {
    ...inherited,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: options.queuePrefix,
    PORT: String(port),
    HOST: "127.0.0.1",
    ADMIN_PORT: String(adminPort),
    ADMIN_HOST: "127.0.0.1",
    DATA_DIR: options.dataDir,
    WEBHOOK_AUTH: "basic",
    WEBHOOK_USERNAME: benchCredentials.username,
    WEBHOOK_PASSWORD: benchCredentials.password,
    LOG_LEVEL: "info",
    // The figures of the earlier scenarios are without the archive; the archive scenario measures it (run-archive.ts).
    ARCHIVE: "off",
    ...options.env,
  };
  const profile = options.cpuProfileDir
    ? ["--cpu-prof", "--cpu-prof-dir", options.cpuProfileDir, "--cpu-prof-name", `service-${options.role}-${Date.now()}.cpuprofile`]
    : [];
  const log = openSync(join(options.dataDir, `service-${options.role}.log`), "a");
  const child = spawn(process.execPath, [...profile, cli, "start", "--role", options.role], { env, stdio: ["ignore", log, log] });
  closeSync(log);
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  try {
    await untilReady(`${adminUrl}/readyz`, () => child.exitCode !== null, 30_000);
  } catch (error) {
    await stopChild(child, 2000);
    throw new Error(`${(error as Error).message}; see ${join(options.dataDir, `service-${options.role}.log`)}`, { cause: error });
  }
  return {
    pid: child.pid!,
    env,
    publicUrl: `http://127.0.0.1:${port}`,
    adminUrl,
    peakRssBytes: () => peakRssBytes(child.pid),
    stop: () => stopChild(child),
  };
}

async function untilReady(url: string, exited: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited()) throw new Error("the service exited during start");
    const ok = await fetch(url).then((response) => response.ok, () => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the service was not ready within ${timeoutMs} ms`);
}

import { join } from "node:path";
import type { Role } from "../../src/app.js";
import { builtCliEntry, startServiceProcess as launch } from "../../test/helpers/start-service-process.js";
import { peakRssBytes } from "./start-child.js";
import { basicAuthorization } from "../../test/helpers/credentials.js";

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
  /** the CLI to run: another build's `cli/main.js` to compare two builds. @defaultValue this tree's dist/cli/main.js */
  entry?: string;
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
 * process on loopback ports, as an operator would, and waits until /readyz answers 200
 * (the launcher the chaos tests use: test/helpers/start-service-process.ts). Settings from
 * the caller's environment are dropped so they cannot bend a run; its log goes to
 * `<dataDir>/service-<role>.log`.
 */
export async function startServiceProcess(options: ServiceOptions): Promise<ServiceProcess> {
  const logFile = join(options.dataDir, `service-${options.role}.log`);
  const env = {
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: options.queuePrefix,
    DATA_DIR: options.dataDir,
    WEBHOOK_AUTH: "basic",
    WEBHOOK_USERNAME: benchCredentials.username,
    WEBHOOK_PASSWORD: benchCredentials.password,
    LOG_LEVEL: "info",
    // The figures of the earlier scenarios are without the archive; the archive scenario measures it (run-archive.ts).
    ARCHIVE: "off",
    ...options.env,
  };
  const nodeArgs = options.cpuProfileDir
    ? ["--cpu-prof", "--cpu-prof-dir", options.cpuProfileDir, "--cpu-prof-name", `service-${options.role}-${Date.now()}.cpuprofile`]
    : [];
  const service = await launch(options.role, env, { entry: options.entry ? [options.entry] : builtCliEntry, nodeArgs, inheritEnvironment: true, logFile, readyTimeoutMs: 30_000 }).catch((error: Error) => {
    throw new Error(`the ${options.role} service did not start; see ${logFile}`, { cause: error });
  });
  return {
    pid: service.pid,
    env: service.env,
    publicUrl: service.publicUrl ?? "",
    adminUrl: service.adminUrl,
    peakRssBytes: () => peakRssBytes(service.pid),
    stop: async () => void (await service.stop(15_000)),
  };
}

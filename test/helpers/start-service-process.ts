import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { inject } from "vitest";
import { settings } from "../../src/config/config.js";
import { freePort } from "../../src/redis/redis-server.js";
import { listensOn } from "./listens-on.js";
import { retryOnTakenPort } from "./retry-on-taken-port.js";
import { until } from "./until.js";

/**
 * The CLI as this run built it (global-setup.ts: compiled once, then copied aside, so a
 * concurrent `npm run build` cannot swap dist/ under a test). Not from source through tsx:
 * that costs each process ~0.45 s more CPU to start, and the suite starts hundreds.
 */
export function cliEntry(): string[] {
  return [builtCli()];
}

/** `dist/cli/main.js` of this run's build (cliEntry): for a test that runs the CLI its own way. */
export function builtCli(): string {
  return join(inject("builtDir"), "dist/cli/main.js");
}

/** The built CLI, as an operator runs it (`npm run build` first): what the bench measures. */
export const builtCliEntry = [resolve(import.meta.dirname, "../../dist/cli/main.js")];

/** The ADMIN_TOKEN of every service process a test starts, unless its `env` says otherwise. */
export const testAdminToken = "test-admin-token";

export type ServiceRole = "all" | "receiver" | "worker";

export interface ServiceProcessOptions {
  /** the CLI to run. @defaultValue cliEntry() (this run's build) */
  entry?: string[];
  /** node flags before the entry (`--cpu-prof` ...) */
  nodeArgs?: string[];
  /**
   * The caller's environment minus every setting of the service (a PATH, a NODE_OPTIONS),
   * so only `env` sets the service; otherwise PATH alone. @defaultValue false
   */
  inheritEnvironment?: boolean;
  /** the working directory of the process. @defaultValue this process's */
  cwd?: string;
  /** where the output goes: appended to this file, or else kept in memory (the last `keepBytes`) */
  logFile?: string;
  /** @defaultValue 4000000 */
  keepBytes?: number;
  /** @defaultValue 240000 (a loaded machine starts a process slowly) */
  readyTimeoutMs?: number;
}

export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  /** the environment it runs with, for commands that must reach the same Redis and tenant */
  env: Record<string, string>;
  adminUrl: string;
  /** Set for the roles with a public ingress. */
  publicUrl?: string;
  /** Everything it wrote to stdout and stderr so far (the JSON log lines), or its log file's text. */
  output(): string;
  /** SIGKILL, and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (and SIGKILL after `graceMs`, when given), and wait for the exit; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * `streamkeeper start --role <role>` in its own process, on free loopback ports, with
 * `env` on top of: PATH (or the caller's environment without settings), loopback hosts, a
 * route that answers nothing (connection refused) unless `env` names one (the service
 * refuses to start without), the test-wide ADMIN_TOKEN, and the archive off (no embedded Postgres per process: set
 * ARCHIVE=on and ARCHIVE_DATABASE_URL to have it). Resolves once its admin /readyz
 * answers 200, i.e. Redis is reachable and writable. Shared by the chaos tests and the bench.
 */
export async function startServiceProcess(role: ServiceRole, env: Record<string, string>, options: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  // The start refuses a port taken since it was found free (exit 2, "already in use")
  // before touching anything: start again on other ports.
  return retryOnTakenPort(() => startServiceProcessOnce(role, env, options));
}

async function startServiceProcessOnce(role: ServiceRole, env: Record<string, string>, options: ServiceProcessOptions): Promise<ServiceProcess> {
  const adminPort = await freePort();
  // A URL that must be known before the start (a stream pointing at it) is a front door's
  // (start-front-door.ts), opened onto this port once it runs: a fixed port could not be retried.
  const port = role === "worker" ? 0 : await freePort();
  const base = options.inheritEnvironment
    ? Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !(entry[0] in settings)))
    : { PATH: process.env.PATH ?? "" };
  const fullEnv: Record<string, string> = {
    ...base,
    HOST: "127.0.0.1",
    ADMIN_HOST: "127.0.0.1",
    ...(env.ROUTES_FILE || env.DOWNSTREAM_URL ? {} : { DOWNSTREAM_URL: "http://127.0.0.1:9/" }),
    ARCHIVE: "off",
    // Given, so no test's service generates one into the working directory's ./.streamkeeper;
    // a test of the generated token sets ADMIN_TOKEN "" (blank is unset) and its own DATA_DIR.
    ADMIN_TOKEN: testAdminToken,
    ...env,
    ADMIN_PORT: String(adminPort),
    PORT: String(port),
  };
  const args = [...(options.nodeArgs ?? []), ...(options.entry ?? cliEntry()), "start", "--role", role];
  let output = "";
  let child: ChildProcess;
  if (options.logFile !== undefined) {
    const log = openSync(options.logFile, "a");
    child = spawn(process.execPath, args, { env: fullEnv, cwd: options.cwd, stdio: ["ignore", log, log] });
    closeSync(log);
  } else {
    child = spawn(process.execPath, args, { env: fullEnv, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const keep = options.keepBytes ?? 4_000_000;
    const append = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > keep) output = output.slice(-keep);
    };
    child.stdout!.on("data", append);
    child.stderr!.on("data", append);
  }
  // "close", not "exit": the process may have exited with its last lines still in the pipes,
  // and the output read after it (a refusal's reason, a "stopped" line) must hold them.
  const exited = once(child, "close").then(([code]) => code as number | null);
  const stopWith = async (signal: NodeJS.Signals, graceMs?: number) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const timer = graceMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  const service: ServiceProcess = {
    child,
    pid: child.pid!,
    env: fullEnv,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    publicUrl: role === "worker" ? undefined : `http://127.0.0.1:${port}`,
    output: () => (options.logFile === undefined ? output : readFileSync(options.logFile, "utf8")),
    kill: async () => void (await stopWith("SIGKILL")),
    stop: (graceMs) => stopWith("SIGTERM", graceMs),
  };
  const readyTimeoutMs = options.readyTimeoutMs ?? 240_000;
  const outcome = await until(
    `streamkeeper start --role ${role} answers 200 at /readyz`,
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) return "exited";
      if ((await fetch(`${service.adminUrl}/readyz`).then((answer) => answer.status, () => 0)) !== 200) return false;
      // Ours, not another test's process that bound the same port first (ours then exits 2 and starts again).
      return (await listensOn(child.pid!, adminPort)) && "ready";
    },
    { withinMs: readyTimeoutMs },
  ).catch(() => "late" as const);
  if (outcome === "exited") {
    await exited;
    throw new Error(`streamkeeper start --role ${role} exited with ${child.exitCode}: ${service.output().slice(-2000)}`);
  }
  if (outcome === "late") {
    await service.kill();
    throw new Error(`streamkeeper start --role ${role} not ready within ${readyTimeoutMs} ms: ${service.output().slice(-2000)}`);
  }
  return service;
}

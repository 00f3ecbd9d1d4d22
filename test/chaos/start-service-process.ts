import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { resolve } from "node:path";
import { freePort } from "../../src/queue/redis-server.js";

/** The CLI from source (tsx), so a concurrent `npm run build` elsewhere cannot swap dist/ under a test. */
export const cliEntry = ["--import", "tsx", resolve(import.meta.dirname, "../../src/cli/main.ts")];

export interface ServiceProcess {
  child: ChildProcess;
  adminUrl: string;
  /** Set for the roles with a public ingress. */
  publicUrl?: string;
  /** Everything it wrote to stdout and stderr so far (the JSON log lines). */
  output(): string;
  /** SIGKILL, and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, and wait for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `streamkeeper start --role <role>` in its own process, on free loopback ports, with
 * exactly `env` (plus PATH): resolves once its admin /readyz answers 200, i.e. Redis is
 * reachable and writable. Output is kept (bounded to the last `keepBytes`).
 */
export async function startServiceProcess(
  role: "all" | "receiver" | "worker",
  env: Record<string, string>,
  options: { readyTimeoutMs?: number; keepBytes?: number; /** the public port, when the test must know it before the start (a stream pointing at it) */ port?: number } = {},
): Promise<ServiceProcess> {
  const adminPort = await freePort();
  const port = role === "worker" ? 0 : (options.port ?? (await freePort()));
  const child = spawn(process.execPath, [...cliEntry, "start", "--role", role], {
    env: {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      ADMIN_HOST: "127.0.0.1",
      // The service refuses to start without a route: one that answers nothing (connection refused) unless the test gives its own.
      ...(env.ROUTES_FILE || env.DOWNSTREAM_URL ? {} : { DOWNSTREAM_URL: "http://127.0.0.1:9/" }),
      // No embedded Postgres per process: a test that wants the archive sets ARCHIVE=on and ARCHIVE_DATABASE_URL.
      ARCHIVE: "off",
      ...env,
      ADMIN_PORT: String(adminPort),
      PORT: String(port),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = options.keepBytes ?? 4_000_000;
  let output = "";
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > keep) output = output.slice(-keep);
  };
  child.stdout!.on("data", append);
  child.stderr!.on("data", append);
  const exited = once(child, "exit").then(([code]) => code as number | null);
  const running: ServiceProcess = {
    child,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    publicUrl: role === "worker" ? undefined : `http://127.0.0.1:${port}`,
    output: () => output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`streamkeeper start --role ${role} exited with ${child.exitCode}: ${output.slice(-2000)}`);
    const status = await fetch(`${running.adminUrl}/readyz`).then((answer) => answer.status, () => 0);
    if (status === 200) return running;
    if (Date.now() > deadline) {
      await running.kill();
      throw new Error(`streamkeeper start --role ${role} not ready within ${options.readyTimeoutMs ?? 60_000} ms: ${output.slice(-2000)}`);
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

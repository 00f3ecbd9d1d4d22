import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { Redis } from "ioredis";

export interface RedisServerOptions {
  /** Working directory: the append-only file and dump live here. */
  dir: string;
  /** TCP port; `0` picks a free one. Ignored when `unixSocket` is set. @defaultValue 0 */
  port?: number;
  /** Listen on this Unix socket only (no TCP). */
  unixSocket?: string;
  /** @defaultValue true */
  appendOnly?: boolean;
  /** @defaultValue "redis-server" from PATH */
  bin?: string;
  /** Further `--name value` pairs, e.g. `["--cluster-enabled", "yes"]`. */
  extraArgs?: string[];
  /** Own process group, so a Ctrl-C meant for the service does not stop Redis under it. */
  detached?: boolean;
  /**
   * Log there instead of to a pipe, and let the server outlive this process: a server
   * still writing to the pipe of an exited starter would lose its log (the embedded Redis,
   * which another process may still use, resolve-redis.ts).
   */
  logFile?: string;
}

export interface RedisServer {
  url: string;
  port: number;
  process: ChildProcess;
  /** Asks Redis to shut down (it writes the append-only file) and waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL: a crash, for fault tests. */
  kill(): Promise<void>;
}

export class RedisServerMissingError extends Error {
  constructor(bin: string) {
    super(
      `${bin} was not found on PATH: install Redis (Debian: apt-get install -y redis-server) or set REDIS_URL to a running Redis`,
    );
    this.name = "RedisServerMissingError";
  }
}

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.unref();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? ok(address.port) : fail(new Error("no port"))));
    });
  });
}

/** Whether a Redis answers PING there now (one attempt, no retries). */
export async function answers(where: { path: string } | { port: number }): Promise<boolean> {
  const probe = new Redis({ ...where, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  probe.on("error", () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/**
 * Starts a `redis-server` child process configured the way BullMQ needs it
 * (`maxmemory-policy noeviction`) and resolves once it accepts connections.
 */
export async function startRedisServer(options: RedisServerOptions): Promise<RedisServer> {
  // A port found free may be taken by another process before redis-server binds it
  // (parallel test files do that): pick another, unless the caller chose the port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisServerOnce(options);
    } catch (error) {
      if (options.port || options.unixSocket || attempt === 3 || !/Address already in use/i.test(String(error))) throw error;
    }
  }
}

async function startRedisServerOnce(options: RedisServerOptions): Promise<RedisServer> {
  const dir = resolve(options.dir);
  await mkdir(dir, { recursive: true });
  const bin = options.bin ?? "redis-server";
  const port = options.unixSocket ? 0 : options.port || (await freePort());
  const args = [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--dir", dir,
    "--appendonly", options.appendOnly === false ? "no" : "yes",
    "--appendfsync", "everysec",
    "--maxmemory-policy", "noeviction",
    "--save", "",
    "--daemonize", "no",
    "--loglevel", "notice",
    ...(options.logFile ? ["--logfile", resolve(options.logFile)] : []),
    ...(options.unixSocket ? ["--unixsocket", resolve(options.unixSocket), "--unixsocketperm", "700"] : []),
    ...(options.extraArgs ?? []),
  ];
  const child = spawn(bin, args, { stdio: options.logFile ? "ignore" : ["ignore", "pipe", "pipe"], detached: options.detached ?? false });
  const exited = new Promise<void>((ok) => child.once("exit", () => ok()));
  const url = options.unixSocket ? `redis+unix://${resolve(options.unixSocket)}` : `redis://127.0.0.1:${port}`;

  await new Promise<void>((ok, fail) => {
    let output = options.logFile ? `(see ${options.logFile})` : "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      fail(new Error(`redis-server did not become ready within 15 s: ${output.slice(-500)}`));
    }, 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/ready to accept connections/i.test(output)) {
        child.stdout?.off("data", onData);
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout?.on("data", onData);
    if (options.logFile) {
      const probe = () => {
        if (child.exitCode !== null) return;
        void answers(options.unixSocket ? { path: resolve(options.unixSocket) } : { port }).then((up) => {
          if (!up) return void setTimeout(probe, 50);
          clearTimeout(timer);
          ok();
        });
      };
      probe();
    }
    child.once("error", (error: NodeJS.ErrnoException) =>
      fail(error.code === "ENOENT" ? new RedisServerMissingError(bin) : error),
    );
    // "close" (its output read to the end), not "exit": the reason it stopped (a port taken,
    // which the caller retries on another) may still be in the pipe when it exits.
    child.once("close", (code) => fail(new Error(`redis-server exited with code ${code} before it was ready: ${output.slice(-500)}`)));
  });
  // Keep draining its output so a chatty server never blocks on a full pipe.
  child.stdout?.resume();
  child.stderr?.resume();
  if (options.logFile) child.unref();

  return {
    url,
    port,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await exited;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGKILL");
      await exited;
    },
  };
}

import { open, readFile, rm, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logger.js";
import { embeddedRedisRestarts } from "../metrics/registry.js";
import { createRepeatLog } from "../repeat-log.js";
import { answers, startRedisServer } from "./redis-server.js";
import { isAlive } from "../is-alive.js";

export interface EmbeddedRedisKeeper {
  /** False once the embedded Redis has been down for `giveUpAfterMs` (no one could restart it): `/healthz` fails then. */
  healthy(): boolean;
  /** Stops watching (before this process leaves the server, so a deliberate stop is not undone). */
  close(): void;
}

export interface KeepEmbeddedRedisOptions {
  /** DATA_DIR/redis: the append-only file, log, pid file and socket. */
  dir: string;
  socket: string;
  logger: Logger;
  /** @defaultValue 500 */
  checkEveryMs?: number;
  /** @defaultValue 5000 */
  giveUpAfterMs?: number;
}

/** Arguments every embedded redis-server is started with (resolve-redis.ts, and a restart here). */
export function embeddedRedisServerOptions(dir: string, socket: string) {
  return { dir, unixSocket: socket, appendOnly: true, detached: true, logFile: join(dir, "redis.log"), extraArgs: ["--pidfile", join(dir, "redis.pid")] };
}

/** A lock older than this was left by a restart that died half-way. */
const staleLockMs = 30_000;

/**
 * Brings the embedded redis-server back when it dies (kill -9, OOM killer): every process
 * using it PINGs its socket every `checkEveryMs`; after two misses in a row, the one that
 * takes the restart lock (a file in DATA_DIR/redis, so processes of every role agree on
 * one leader) starts it again from its append-only file. A server that still runs but does
 * not answer (its pid file names a live process) is not doubled: two servers on one
 * append-only file would corrupt it. Logged and counted (`embedded_redis_restarts_total`);
 * while it stays down past `giveUpAfterMs`, `healthy()` is false.
 */
export function keepEmbeddedRedis(options: KeepEmbeddedRedisOptions): EmbeddedRedisKeeper {
  const { dir, socket, logger } = options;
  const checkEveryMs = options.checkEveryMs ?? 500;
  const giveUpAfterMs = options.giveUpAfterMs ?? 5000;
  const lockFile = join(dir, "restart.lock");
  const pidFile = join(dir, "redis.pid");
  const logCannot = createRepeatLog(logger, "error", "the embedded redis-server is down and cannot be restarted; /healthz fails until it answers again", 60_000);
  let downSince: number | undefined;
  let misses = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  async function check(): Promise<void> {
    if (await answers({ path: socket })) {
      if (downSince !== undefined) logger.info({ downMs: Date.now() - downSince }, "the embedded redis-server answers again");
      downSince = undefined;
      misses = 0;
      return;
    }
    downSince ??= Date.now();
    if (++misses < 2 || closed) return;
    const lock = await takeLock();
    if (!lock) return; // another process leads the restart
    try {
      if (await answers({ path: socket })) return;
      const stuck = await runningPid();
      if (stuck !== undefined) {
        logCannot({ pid: stuck, reason: "its process runs but does not answer; not starting a second one on the same append-only file" });
        return;
      }
      await rm(socket, { force: true });
      const started = await startRedisServer(embeddedRedisServerOptions(dir, socket));
      embeddedRedisRestarts.inc();
      logger.warn({ pid: started.process.pid, downMs: Date.now() - downSince, socket }, "the embedded redis-server had died; restarted it from its append-only file");
      downSince = undefined;
      misses = 0;
    } catch (error) {
      logCannot({ err: error });
    } finally {
      await lock.release();
    }
  }

  async function takeLock(): Promise<{ release(): Promise<void> } | undefined> {
    const mine = `${process.pid} ${Date.now()}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const handle = await open(lockFile, "wx", 0o600);
        await handle.writeFile(mine);
        await handle.close();
        return {
          release: async () => {
            if ((await readFile(lockFile, "utf8").catch(() => "")) === mine) await unlink(lockFile).catch(() => {});
          },
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        const [pid, at] = (await readFile(lockFile, "utf8").catch(() => "")).split(" ").map(Number);
        if (pid !== undefined && at !== undefined && isAlive(pid) && Date.now() - at < staleLockMs) return undefined;
        await unlink(lockFile).catch(() => {});
      }
    }
    return undefined;
  }

  async function runningPid(): Promise<number | undefined> {
    const pid = Number((await readFile(pidFile, "utf8").catch(() => "")).trim());
    return pid > 0 && isAlive(pid) ? pid : undefined;
  }

  const loop = () => {
    if (closed) return;
    check()
      .catch((error: unknown) => logCannot({ err: error }))
      .finally(() => {
        if (!closed) timer = setTimeout(loop, checkEveryMs).unref();
      });
  };
  timer = setTimeout(loop, checkEveryMs).unref();

  return {
    healthy: () => downSince === undefined || Date.now() - downSince < giveUpAfterMs,
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

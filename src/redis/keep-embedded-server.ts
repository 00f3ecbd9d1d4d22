import { open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logging/logger.js";
import { createRepeatLog } from "../logging/repeat-log.js";
import { isAlive } from "../process/is-alive.js";

export interface EmbeddedServerKeeper {
  /** False once the server has been down for `giveUpAfterMs` (no one could restart it). */
  healthy(): boolean;
  /** Stops watching (before this process leaves the server, so a deliberate stop is not undone). */
  close(): void;
}

export interface KeepEmbeddedServerOptions {
  /** The server as logs name it: "the embedded redis-server". */
  name: string;
  /** Its folder under DATA_DIR: the restart lock goes there. */
  dir: string;
  /** Whether it answers now. */
  answers(): Promise<boolean>;
  /** The pid of its process when one still runs (one that runs but does not answer is never doubled). */
  runningPid(): Promise<number | undefined>;
  /** Starts it again from its data; resolves once it answers. */
  restart(): Promise<{ pid?: number }>;
  /** Counts a restart (its metric). */
  restarted(): void;
  /** What a restart recovers from, for the log: "its append-only file". */
  recoversFrom: string;
  logger: Logger;
  /** @defaultValue 500 */
  checkEveryMs?: number;
  /** @defaultValue 5000 */
  giveUpAfterMs?: number;
}

/** A lock older than this was left by a restart that died half-way. */
const staleLockMs = 60_000;

/**
 * Brings an embedded server (redis-server, Postgres) back when it dies (kill -9, the OOM
 * killer): every process using it asks it every `checkEveryMs`; after two misses in a row,
 * the one that takes the restart lock (a file in its folder under DATA_DIR, so processes of
 * every role agree on one leader) starts it again from its data. A server that still runs
 * but does not answer (its pid names a live process) is not doubled: two servers on one
 * data folder would corrupt it. Logged and counted; while it stays down past
 * `giveUpAfterMs`, `healthy()` is false.
 */
export function keepEmbeddedServer(options: KeepEmbeddedServerOptions): EmbeddedServerKeeper {
  const { name, logger } = options;
  const checkEveryMs = options.checkEveryMs ?? 500;
  const giveUpAfterMs = options.giveUpAfterMs ?? 5000;
  const lockFile = join(options.dir, "restart.lock");
  const logCannot = createRepeatLog(logger, "error", `${name} is down and cannot be restarted; trying again`, 60_000);
  let downSince: number | undefined;
  let misses = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  async function check(): Promise<void> {
    if (await options.answers()) {
      if (downSince !== undefined) logger.info({ downMs: Date.now() - downSince }, `${name} answers again`);
      downSince = undefined;
      misses = 0;
      return;
    }
    downSince ??= Date.now();
    if (++misses < 2 || closed) return;
    const lock = await takeLock();
    if (!lock) return; // another process leads the restart
    try {
      if (await options.answers()) return;
      const stuck = await options.runningPid();
      if (stuck !== undefined) {
        logCannot({ pid: stuck, reason: "its process runs but does not answer; not starting a second one on the same data" });
        return;
      }
      const started = await options.restart();
      options.restarted();
      logger.warn({ pid: started.pid, downMs: Date.now() - downSince }, `${name} had died; restarted it from ${options.recoversFrom}`);
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

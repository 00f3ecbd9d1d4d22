import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logging/logger.js";
import { embeddedRedisRestarts } from "../metrics/registry.js";
import { answers, startRedisServer } from "./redis-server.js";
import { isAlive } from "../process/is-alive.js";
import { keepEmbeddedServer, type EmbeddedServerKeeper } from "./keep-embedded-server.js";

export type EmbeddedRedisKeeper = EmbeddedServerKeeper;

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

/**
 * Brings the embedded redis-server back when it dies, from its append-only file
 * (keep-embedded-server.ts): PINGs of its socket, a restart led by one process, counted
 * (`embedded_redis_restarts_total`); `healthy()` is false while it stays down (/healthz).
 */
export function keepEmbeddedRedis(options: KeepEmbeddedRedisOptions): EmbeddedRedisKeeper {
  const { dir, socket } = options;
  return keepEmbeddedServer({
    name: "the embedded redis-server",
    dir,
    answers: () => answers({ path: socket }),
    runningPid: async () => {
      const pid = Number((await readFile(join(dir, "redis.pid"), "utf8").catch(() => "")).trim());
      return pid > 0 && isAlive(pid) ? pid : undefined;
    },
    restart: async () => {
      await rm(socket, { force: true });
      return { pid: (await startRedisServer(embeddedRedisServerOptions(dir, socket))).process.pid };
    },
    restarted: () => embeddedRedisRestarts.inc(),
    recoversFrom: "its append-only file",
    logger: options.logger,
    checkEveryMs: options.checkEveryMs,
    giveUpAfterMs: options.giveUpAfterMs,
  });
}

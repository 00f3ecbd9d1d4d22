import { rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Config } from "../config/config.js";
import { dataDirProblem } from "../config/data-dir-problem.js";
import type { Logger } from "../logging/logger.js";
import { joinEmbeddedRedis, type EmbeddedRedisUse } from "./embedded-redis-users.js";
import { embeddedRedisServerOptions, keepEmbeddedRedis } from "./keep-embedded-redis.js";
import { answers, startRedisServer } from "./redis-server.js";

export interface ResolvedRedis {
  url: string;
  /**
   * Done with Redis. For the embedded one: drops this process's lease and, when no other
   * Streamkeeper process uses the server any more, stops it; otherwise it keeps running.
   */
  release(): Promise<void>;
  /** The embedded one: false while it is down and could not be restarted (keep-embedded-redis.ts); /healthz fails then. */
  healthy?(): boolean;
}

/**
 * REDIS_URL when set; otherwise the embedded redis-server under DATA_DIR: reused when
 * one already runs there (another role, a CLI call, an orphan of a killed process), else
 * started from PATH with its append-only file and log in DATA_DIR/redis. It listens on a
 * Unix socket only. Every process using it holds a lease (embedded-redis-users.ts): the
 * last one out stops it. `who` names the process in its lease (e.g. `start --role all`).
 */
export async function resolveRedis(config: Config, logger: Logger, who = "command"): Promise<ResolvedRedis> {
  if (config.env.REDIS_URL) return { url: config.env.REDIS_URL, release: async () => {} };
  const dir = join(resolve(config.env.DATA_DIR), "redis");
  const socket = join(dir, "redis.sock");
  const url = `redis+unix://${socket}`;
  let started: Awaited<ReturnType<typeof startRedisServer>> | undefined;
  let use: EmbeddedRedisUse | undefined;
  // Twice at most: a server found running may be stopping (its last user left just now).
  for (let attempt = 1; !use; attempt++) {
    if (!(await answers({ path: socket }))) {
      started = await rm(socket, { force: true })
        .then(() => startRedisServer(embeddedRedisServerOptions(dir, socket)))
        .catch(dataDirProblem(config.env.DATA_DIR, "run the embedded redis-server", "set REDIS_URL to a Redis of your own"));
      logger.info({ socket, pid: started.process.pid }, "started the embedded redis-server (append-only file and log in DATA_DIR/redis)");
    }
    try {
      use = await joinEmbeddedRedis(url, who, logger);
    } catch (error) {
      if (attempt >= 2 || started) throw error;
      logger.info("the embedded redis-server found running stopped meanwhile; starting one");
    }
  }
  if (!started) {
    logger.info({ socket, users: use.others }, use.others > 0 ? "reusing the embedded redis-server already running in DATA_DIR" : "adopted the embedded redis-server left running in DATA_DIR (its starter is gone); it stops when the last process using it does");
  }
  // Every process using it watches it; one restarts it when it dies (DATA_DIR in README.md#settings).
  const keeper = keepEmbeddedRedis({ dir, socket, logger });
  let releasing: Promise<void> | undefined;
  return {
    url,
    healthy: keeper.healthy,
    release() {
      releasing ??= (async () => {
        keeper.close();
        if (!(await use.leave())) {
          logger.info("the embedded redis-server keeps running: another Streamkeeper process still uses it");
          return;
        }
        if (await use.stopServer()) logger.info("stopped the embedded redis-server: no other Streamkeeper process uses it");
        else logger.info("the embedded redis-server keeps running: another Streamkeeper process started using it");
      })();
      return releasing;
    },
  };
}

/** The embedded redis-server's URL when one runs under DATA_DIR now, else undefined; never starts one (for commands that only read). */
export async function runningEmbeddedRedis(config: Config): Promise<string | undefined> {
  const socket = join(resolve(config.env.DATA_DIR), "redis", "redis.sock");
  return (await answers({ path: socket })) ? `redis+unix://${socket}` : undefined;
}

import { rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { startRedisServer } from "./redis-server.js";

export interface ResolvedRedis {
  url: string;
  /** Stops the embedded redis-server if this process started it; otherwise does nothing. */
  release(): Promise<void>;
}

/**
 * REDIS_URL when set; otherwise the embedded redis-server under DATA_DIR: reused when
 * one already runs there (another role, a CLI call, an earlier start), else started from
 * PATH with its append-only file in DATA_DIR/redis. It listens on a Unix socket only.
 */
export async function resolveRedis(config: Config, logger: Logger): Promise<ResolvedRedis> {
  if (config.env.REDIS_URL) return { url: config.env.REDIS_URL, release: async () => {} };
  const dir = join(resolve(config.env.DATA_DIR), "redis");
  const socket = join(dir, "redis.sock");
  const url = `redis+unix://${socket}`;
  if (await answersPing(socket)) {
    logger.info({ socket }, "reusing the embedded redis-server already running in DATA_DIR");
    return { url, release: async () => {} };
  }
  await rm(socket, { force: true });
  const server = await startRedisServer({ dir, unixSocket: socket, appendOnly: true, detached: true });
  logger.info({ socket, pid: server.process.pid }, "started the embedded redis-server (append-only file in DATA_DIR/redis)");
  return { url, release: () => server.stop() };
}

/** The embedded redis-server's URL when one runs under DATA_DIR now, else undefined; never starts one (for commands that only read). */
export async function runningEmbeddedRedis(config: Config): Promise<string | undefined> {
  const socket = join(resolve(config.env.DATA_DIR), "redis", "redis.sock");
  return (await answersPing(socket)) ? `redis+unix://${socket}` : undefined;
}

async function answersPing(socket: string): Promise<boolean> {
  const probe = new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
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

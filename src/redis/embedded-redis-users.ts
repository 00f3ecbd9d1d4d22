import { hostname } from "node:os";
import { loadLua } from "./load-lua.js";
import type { Logger } from "../logging/logger.js";
import { infoField } from "./info-field.js";
import { closeRedis, createRedis, untilReady } from "./redis-connection.js";
import { isAlive } from "../process/is-alive.js";

/** One field per process using the embedded Redis: `<host>:<pid>` -> `{pid, host, who, heartbeatAt}`. */
export const usersKey = "streamkeeper:embedded-redis:users";
const embeddedRedisUsersKey = usersKey;

/**
 * Another embedded server shared the same way (the archive's Postgres,
 * archive/resolve-archive-database.ts): its leases live in this Redis under their own
 * key, and the last one out stops it with `stop` instead of a Redis SHUTDOWN.
 */
export interface SharedServer {
  usersKey: string;
  stop(): Promise<void>;
}
const heartbeatMs = 10_000;
/** A lease on this host counts while its process lives, unless its heartbeat is this old (the pid was reused). */
const staleSameHostMs = 5 * 60_000;
/** On another host (a shared DATA_DIR volume) only the heartbeat tells. */
const staleOtherHostMs = 3 * heartbeatMs;

interface Lease {
  pid: number;
  host: string;
  who: string;
  heartbeatAt: number;
}

export interface EmbeddedRedisUse {
  /** Other processes using it now (0 when this one adopted an orphan or started it). */
  others: number;
  /** Drops this process's lease; true when no other process uses the server any more (this one is the last out). */
  leave(): Promise<boolean>;
  /**
   * After leave() answered true: the server's SHUTDOWN (it fsyncs the append-only file),
   * waiting until its process is gone; false when a process joined meanwhile (then it runs on).
   */
  stopServer(): Promise<boolean>;
}

// Drop our lease and answer the rest in one step, so two processes leaving at once cannot both miss each other.
const leaveScript = loadLua(new URL("./embedded-redis-leave.lua", import.meta.url));

/**
 * A lease per process in the embedded Redis itself, refreshed every 10 s: the last
 * process out stops the server, none stops it under another (a CLI command or a
 * restarted receiver stopped it under a running service; an orphan left by kill -9 was
 * never stopped). A lease whose process is gone (kill -9) does not count, so the next
 * process adopts the orphan and stops it when it is the last.
 */
export async function joinEmbeddedRedis(url: string, who: string, logger: Logger, leaseId?: string, server?: SharedServer): Promise<EmbeddedRedisUse> {
  const usersKey = server?.usersKey ?? embeddedRedisUsersKey;
  const redis = createRedis(url, "client", `streamkeeper-lease-${who}`);
  redis.on("error", (error) => logger.debug({ err: error }, "embedded Redis lease connection error"));
  const host = hostname();
  // One lease per process; `leaseId` lets a test hold several in one process.
  const field = leaseId ?? `${host}:${process.pid}`;
  const beat = () => redis.hset(usersKey, field, JSON.stringify({ pid: process.pid, host, who, heartbeatAt: Date.now() } satisfies Lease));
  try {
    await untilReady(redis, 5000);
    await beat();
  } catch (error) {
    redis.disconnect(); // no reconnect loop left behind to hold the process open
    throw error;
  }
  const heartbeat = setInterval(() => void beat().catch(() => {}), heartbeatMs);
  heartbeat.unref();
  const others = liveLeases(await redis.hgetall(usersKey), field).length;

  return {
    others,
    async leave() {
      clearInterval(heartbeat);
      let last = false;
      try {
        // Just after a restart of the server (keep-embedded-redis.ts) this connection may
        // still be reconnecting: wait a little, or the server would be left running.
        await untilReady(redis, 3000).catch(() => {});
        const flat = (await redis.eval(leaveScript, 1, usersKey, field)) as string[] | Record<string, string>;
        const leases = Array.isArray(flat) ? Object.fromEntries(flat.flatMap((value, index) => (index % 2 === 0 ? [[value, flat[index + 1]!]] : []))) : flat;
        const live = liveLeases(leases, field);
        const dead = Object.keys(leases).filter((key) => !live.includes(key));
        if (dead.length > 0) await redis.hdel(usersKey, ...dead);
        last = live.length === 0;
      } catch (error) {
        // The server is gone already, or not answering: nothing of ours to stop.
        logger.debug({ err: error }, "embedded Redis lease could not be dropped");
      }
      if (!last) await closeRedis(redis);
      return last;
    },
    async stopServer() {
      // A process that joined since leave() holds a lease by now: it keeps the server.
      if (liveLeases(await redis.hgetall(usersKey), field).length > 0) {
        await closeRedis(redis);
        return false;
      }
      if (server) {
        await closeRedis(redis);
        await server.stop();
        return true;
      }
      const pid = Number(infoField(await redis.info("server"), "process_id"));
      await redis.call("SHUTDOWN").catch(() => {}); // the connection closes under the reply
      redis.disconnect();
      const deadline = Date.now() + 15_000;
      while (pid > 0 && isAlive(pid) && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 25));
      return true;
    },
  };
}

/** The fields of leases that still count, other than ours. */
function liveLeases(leases: Record<string, string>, ours: string): string[] {
  const host = hostname();
  return Object.entries(leases)
    .filter(([key]) => key !== ours)
    .filter(([, value]) => {
      let lease: Lease;
      try {
        lease = JSON.parse(value) as Lease;
      } catch {
        return false;
      }
      const age = Date.now() - lease.heartbeatAt;
      return lease.host === host ? isAlive(lease.pid) && age < staleSameHostMs : age < staleOtherHostMs;
    })
    .map(([key]) => key);
}

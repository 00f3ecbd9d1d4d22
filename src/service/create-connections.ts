import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { closeRedis, createRedis, untilReady, type ConnectionPurpose, type RedisClient } from "../redis/redis-connection.js";
import { checkRedisVersion } from "../redis/redis-version.js";
import { watchRedisReachability } from "../redis/watch-redis-reachability.js";
import { resolveRedis, type ResolvedRedis } from "../redis/resolve-redis.js";
import type { Role } from "./role.js";
import { closeInOrder } from "./close-in-order.js";

/** The connections a role uses, each made once. */
export interface Connections {
  redis: ResolvedRedis;
  /** Fails fast: the ingress (503 at once while Redis is away), the admin surface's reads, leases. */
  client: RedisClient;
  /** Waits out an outage: the tenant pace and the sweep's checkpoints. */
  waiting: RedisClient;
  /** A worker role's: deliveries recorded (ledger, freshness, attempts), the dispatcher's and the reconcile worker's own commands. */
  worker?: { records: RedisClient; dispatch: RedisClient; reconcile: RedisClient };
  /** Whether Redis answered at start; the service starts anyway (503 and /readyz failing until it does). */
  reachable: boolean;
  close(): Promise<void>;
}

/**
 * REDIS_URL or the embedded Redis, and the process's connections to it. Too old a Redis
 * is a setting to change (exit 2), checked now or, when Redis comes up later, then.
 */
export async function createConnections(config: Config, logger: Logger, role: Role): Promise<Connections> {
  const redis = await resolveRedis(config, logger, `start --role ${role}`);
  const connect = (purpose: ConnectionPurpose, name: string) => {
    const connection = createRedis(redis.url, purpose, name);
    // Outages are said by the parts using a connection (a 503, a worker's repeat log).
    connection.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
    return connection;
  };
  const client = connect("client", `streamkeeper-${role}`);
  client.once("ready", () => void warnUnlessNoEviction(client, logger));
  const reachable = await untilReady(client, 5000).then(
    () => true,
    (error: Error) => (logger.error(`${error.message}; starting anyway`), false),
  );
  if (reachable) {
    await checkRedisVersion(client).catch(async (error: unknown) => {
      client.disconnect();
      await redis.release();
      throw error;
    });
  } else {
    client.once("ready", () => void checkRedisVersion(client).catch((error: Error) => logger.error(error.message)));
  }
  // One line per outage and per recovery (the start said it already when Redis was away).
  const unwatchRedis = watchRedisReachability(client, logger, reachable);
  const waiting = connect("worker", `streamkeeper-${role}-tenant`);
  const worker =
    role === "receiver"
      ? undefined
      : { records: connect("worker", `streamkeeper-${role}-ledger`), dispatch: connect("worker", "streamkeeper-dispatch"), reconcile: connect("worker", "streamkeeper-reconcile") };
  return {
    redis,
    client,
    waiting,
    worker,
    reachable,
    close: () =>
      closeInOrder([
        worker && (() => Promise.all([worker.dispatch, worker.reconcile, worker.records].map((connection) => closeRedis(connection)))),
        () => closeRedis(waiting),
        async () => unwatchRedis(),
        () => closeRedis(client),
        () => redis.release(),
      ]),
  };
}

async function warnUnlessNoEviction(client: RedisClient, logger: Logger) {
  try {
    const [, policy] = (await client.config("GET", "maxmemory-policy")) as [string, string];
    if (policy !== "noeviction") {
      logger.warn({ policy }, "Redis maxmemory-policy is not noeviction: Redis may evict queued events under memory pressure; set maxmemory-policy noeviction");
    }
  } catch {
    // Managed Redis often forbids CONFIG: nothing to check then.
  }
}

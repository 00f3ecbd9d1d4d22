import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { redactUrlCredentials } from "../logging/redact-secrets.js";
import { settlesWithin } from "../time/settles-within.js";

/**
 * `worker`: BullMQ workers and queue-events block and must retry forever
 * (`maxRetriesPerRequest: null`, docs/libraries.md#bullmq-and-ioredis-connections). `client`: the HTTP path and the CLI
 * fail fast, so the receiver answers 503 within a second or two when Redis is gone.
 */
export type ConnectionPurpose = "worker" | "client";

/** A standalone Redis or a Redis Cluster: BullMQ and the ledger take either. */
export type RedisClient = Redis | Cluster;

/**
 * REDIS_URL forms:
 * - `redis://[user:password@]host:port[/db]`, `rediss://...` (TLS): one Redis;
 * - `redis+unix:///path/redis.sock` (the embedded Redis);
 * - `redis+cluster://[user:password@]host:port[,host:port...]`, `rediss+cluster://...`:
 *   a Redis Cluster, reached through any of these seed nodes (one is enough, e.g. a
 *   managed cluster's configuration endpoint). The cluster choice lives in the URL, so
 *   every process and command that is given REDIS_URL connects the same way.
 */
export function createRedis(url: string, purpose: ConnectionPurpose, name = "streamkeeper"): RedisClient {
  const perPurpose: RedisOptions =
    purpose === "worker"
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, connectTimeout: 1000, commandTimeout: 1500 };
  const cluster = parseClusterUrl(url);
  if (cluster) {
    const options: ClusterOptions = {
      // Cluster-wide readiness: "ready" only once CLUSTER INFO says cluster_state:ok.
      enableReadyCheck: true,
      enableOfflineQueue: purpose === "worker",
      // A dead node leaves the pool; the slots refresh (every 5 s) takes it back once it
      // answers again (cluster-connection.test.ts). With every node gone, reconnect like this:
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
      redisOptions: {
        ...perPurpose,
        connectionName: name,
        username: cluster.username,
        password: cluster.password,
        ...(cluster.tls ? { tls: {} } : {}),
      },
      // Managed clusters with TLS announce host names whose certificates name the host,
      // not its address: connect by name so the certificate check passes.
      ...(cluster.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    };
    return new Cluster(cluster.nodes, options);
  }
  if (url.includes(",")) {
    throw new Error(`REDIS_URL names several hosts (${redactUrlCredentials(url)}): for a Redis Cluster write redis+cluster://host:port,host:port`);
  }
  const common: RedisOptions = {
    ...perPurpose,
    connectionName: name,
    lazyConnect: false,
    ...(purpose === "client" ? { enableOfflineQueue: false } : {}),
    retryStrategy: (times) => Math.min(50 * 2 ** times, 1000),
  };
  if (url.startsWith("redis+unix://") || url.startsWith("unix://")) {
    return new Redis({ ...common, path: url.replace(/^(redis\+)?unix:\/\//, "") });
  }
  return new Redis(url, common);
}

export interface ClusterUrl {
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  tls: boolean;
}

/** The seed nodes and credentials of a `redis+cluster://` or `rediss+cluster://` URL; undefined for other URLs. */
export function parseClusterUrl(url: string): ClusterUrl | undefined {
  const match = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?(0)?$/.exec(url.trim());
  if (!match) {
    if (/^rediss?\+cluster:/.test(url.trim())) {
      throw new Error(`REDIS_URL ${redactUrlCredentials(url)} is not a cluster URL: write redis+cluster://[user:password@]host:port[,host:port...] (no path, no query)`);
    }
    return undefined;
  }
  const [, scheme, userinfo, hosts] = match as unknown as [string, string, string | undefined, string];
  const nodes = hosts.split(",").map((hostPort) => {
    // Parse each seed as a plain redis:// URL, which also handles [IPv6]:port.
    const parsed = new URL(`redis://${hostPort.trim()}`);
    if (!parsed.hostname) throw new Error(`REDIS_URL: the cluster seed "${hostPort}" has no host; write host:port`);
    return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(parsed.port || 6379) };
  });
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(":");
    username = decodeURIComponent(colon === -1 ? userinfo : userinfo.slice(0, colon)) || undefined;
    password = colon === -1 ? undefined : decodeURIComponent(userinfo.slice(colon + 1)) || undefined;
  }
  return { nodes, username, password, tls: scheme === "rediss" };
}


/**
 * QUIT, or drop the connection when Redis does not answer within `ms`: QUIT waits behind
 * commands queued while Redis is away, and must never hang a shutdown. True when it quit.
 */
export async function closeRedis(connection: RedisClient, ms = 1000): Promise<boolean> {
  if (await settlesWithin(connection.quit(), ms)) return true;
  connection.disconnect();
  return false;
}

/** Resolves once the connection is ready; rejects after `timeoutMs` with the last error. */
export async function untilReady(redis: RedisClient, timeoutMs = 10_000): Promise<void> {
  if (redis.status === "ready") return;
  await new Promise<void>((ok, fail) => {
    let lastError: Error | undefined;
    const onError = (error: Error) => (lastError = error);
    const timer = setTimeout(() => {
      redis.off("ready", onReady);
      redis.off("error", onError);
      fail(new Error(`Redis is not reachable${lastError ? `: ${lastError.message}` : ""}; check REDIS_URL`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      redis.off("error", onError);
      ok();
    };
    redis.once("ready", onReady);
    redis.on("error", onError);
  });
}

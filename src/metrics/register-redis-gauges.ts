import type { Cluster, Redis } from "ioredis";
import { infoField } from "../redis/info-field.js";
import { onScrape, redisMemoryMax, redisMemoryUsed, routeCircuitOpen } from "./registry.js";

/**
 * Makes `/metrics` read, at scrape time and in one pipelined round trip (plus one INFO per
 * master on a Cluster): `streamkeeper_redis_memory_used_bytes` and `_max_bytes` (INFO
 * memory; on a Cluster, of the master nearest its maxmemory), and
 * `streamkeeper_route_circuit_open{route}` from each route's circuit state in Redis, so
 * every process reports the same value whichever one opened the circuit.
 * `circuitKeys` maps a route to its key (queue-names.ts `circuitKey`). Returns the removal.
 */
export function registerRedisGauges(connection: Redis | Cluster, circuitKeys: Map<string, string>): () => void {
  const routes = [...circuitKeys.keys()];
  return onScrape(async () => {
    try {
      // The circuits share the `{QUEUE_PREFIX}` tag (queue-names.ts), so one node; on a
      // Cluster our keys spread over every master, so INFO is read from each of them.
      const [replies, clusterInfo] = await Promise.all([
        connection.pipeline([...(connection.isCluster ? [["ping"]] : [["info", "memory"]]), ...routes.map((route) => ["hexists", circuitKeys.get(route)!, "openedAt"])]).exec(),
        connection.isCluster ? fullestMaster(connection as Cluster) : undefined,
      ]);
      const [infoError, info] = clusterInfo ?? replies?.[0] ?? [];
      if (infoError && infoError.name !== "ReplyError") throw infoError;
      if (infoError) {
        // Redis answered, but refuses INFO (a managed Redis may rename it): no memory gauges, Redis is still up.
        redisMemoryUsed.reset();
        redisMemoryMax.reset();
      } else {
        redisMemoryUsed.set(infoBytes(String(info), "used_memory"));
        redisMemoryMax.set(infoBytes(String(info), "maxmemory"));
      }
      routes.forEach((route, index) => {
        const [error, open] = replies?.[index + 1] ?? [];
        if (!error) routeCircuitOpen.set({ route }, Number(open));
      });
      return true;
    } catch {
      // Absent rather than stale; redis_up says why.
      redisMemoryUsed.reset();
      redisMemoryMax.reset();
      routeCircuitOpen.reset();
      return false;
    }
  });
}

/** INFO memory of the master nearest its maxmemory (the first to refuse writes), as a pipeline reply. */
async function fullestMaster(cluster: Cluster): Promise<[Error | null, unknown]> {
  try {
    const infos = await Promise.all(cluster.nodes("master").map((node) => node.info("memory")));
    const fill = (info: string) => infoBytes(info, "used_memory") / (infoBytes(info, "maxmemory") || Number.MAX_SAFE_INTEGER);
    return [null, infos.reduce((fullest, info) => (fill(info) > fill(fullest) ? info : fullest))];
  } catch (error) {
    return [error as Error, undefined];
  }
}

/** A byte count from INFO memory; 0 when absent (maxmemory 0 means no limit, as Redis says it). */
function infoBytes(info: string, name: string): number {
  return Number(infoField(info, name)) || 0;
}

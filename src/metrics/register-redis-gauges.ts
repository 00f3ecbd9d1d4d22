import type { Cluster, Redis } from "ioredis";
import { onScrape, redisMemoryMax, redisMemoryUsed, routeCircuitOpen } from "./registry.js";

/**
 * Makes `/metrics` read, at scrape time and in one pipelined round trip:
 * `streamkeeper_redis_memory_used_bytes` and `_max_bytes` (INFO memory), and
 * `streamkeeper_route_circuit_open{route}` from each route's circuit state in Redis, so
 * every process reports the same value whichever one opened the circuit.
 * `circuitKeys` maps a route to its key (queue-names.ts `circuitKey`). Returns the removal.
 */
export function registerRedisGauges(connection: Redis | Cluster, circuitKeys: Map<string, string>): () => void {
  const routes = [...circuitKeys.keys()];
  return onScrape(async () => {
    try {
      // On a Cluster, INFO goes to one node: every key of ours lives in one slot (queue-names.ts), so on that node's.
      const replies = (await connection
        .pipeline([["info", "memory"], ...routes.map((route) => ["hexists", circuitKeys.get(route)!, "openedAt"])])
        .exec()) ?? [];
      const [infoError, info] = replies[0] ?? [];
      if (infoError && infoError.name !== "ReplyError") throw infoError;
      if (infoError) {
        // Redis answered, but refuses INFO (a managed Redis may rename it): no memory gauges, Redis is still up.
        redisMemoryUsed.reset();
        redisMemoryMax.reset();
      } else {
        redisMemoryUsed.set(infoField(String(info), "used_memory"));
        redisMemoryMax.set(infoField(String(info), "maxmemory"));
      }
      routes.forEach((route, index) => {
        const [error, open] = replies[index + 1] ?? [];
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

function infoField(info: string, name: string): number {
  const match = new RegExp(`^${name}:(\\d+)`, "m").exec(info);
  return match ? Number(match[1]) : 0;
}

import type { Cluster, Redis } from "ioredis";
import { ledgerKeyPattern } from "../../src/queue/queue-names.js";

/** Every ledger key of a prefix on one Redis (SCAN, never KEYS). */
export async function ledgerKeys(redis: Redis | Cluster, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await (redis as Redis).scan(cursor, "MATCH", ledgerKeyPattern(prefix), "COUNT", 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== "0");
  return found;
}

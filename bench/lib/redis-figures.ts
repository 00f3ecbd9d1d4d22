import type { Redis } from "ioredis";

/** INFO memory `used_memory`: the bytes Redis has allocated for data and overhead. */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const match = /^used_memory:(\d+)/m.exec(info);
  if (!match) throw new Error("INFO memory has no used_memory line");
  return Number(match[1]);
}

/** Counts keys matching a pattern with SCAN (never KEYS, which blocks Redis). */
export async function countKeys(redis: Redis, pattern: string): Promise<number> {
  let cursor = "0";
  let count = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 5000);
    cursor = next;
    count += keys.length;
  } while (cursor !== "0");
  return count;
}

import type { Redis } from "ioredis";
import { ledgerKeyPattern } from "../../src/queue/queue-names.js";

/** INFO memory `used_memory`: the bytes Redis has allocated for data and overhead. */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const match = /^used_memory:(\d+)/m.exec(info);
  if (!match) throw new Error("INFO memory has no used_memory line");
  return Number(match[1]);
}

/**
 * `used_memory` less what is not data and comes and goes with the traffic of the moment:
 * the append-only file's pending buffer and the clients' buffers (a mass delete leaves
 * ~1 MB queued for the AOF when it is read at once).
 */
export async function usedMemoryForData(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? 0);
  return field("used_memory") - field("mem_aof_buffer") - field("mem_clients_normal");
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

/** Append-only-file rewrites so far and the last fork's duration: a fork stops Redis while it copies its page tables. */
export async function rewriteFigures(redis: Redis): Promise<{ aofRewrites: number; totalForks: number; latestForkMs: number }> {
  const info = `${await redis.info("persistence")}\n${await redis.info("stats")}`;
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? 0);
  return { aofRewrites: field("aof_rewrites"), totalForks: field("total_forks"), latestForkMs: field("latest_fork_usec") / 1000 };
}

/** The ids the ledger holds: the entries of its bucket hashes (not their name dictionaries), found with SCAN. */
export async function countLedgerIds(redis: Redis, queuePrefix: string): Promise<number> {
  let cursor = "0";
  let count = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", ledgerKeyPattern(queuePrefix), "COUNT", 5000);
    cursor = next;
    const buckets = keys.filter((key) => !key.endsWith(":names"));
    const lengths = await Promise.all(buckets.map((key) => redis.hlen(key)));
    count += lengths.reduce((sum, length) => sum + length, 0);
  } while (cursor !== "0");
  return count;
}

/** INFO commandstats: calls so far per command (`evalsha`, `hset`, ...; a script's own commands count too) and the µs spent in them (a script's include its commands'). */
export async function commandCalls(redis: Pick<Redis, "info">): Promise<Record<string, { calls: number; usec: number }>> {
  const info = await redis.info("commandstats");
  const calls: Record<string, { calls: number; usec: number }> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) calls[match[1]!] = { calls: Number(match[2]), usec: Number(match[3]) };
  return calls;
}

/** One command's calls and µs between two `commandCalls` readings (`evalsha`: the scripts, their own commands included). */
export function callsBetween(before: Record<string, { calls: number; usec: number }>, after: Record<string, { calls: number; usec: number }>, command: string): { calls: number; usec: number } {
  return { calls: (after[command]?.calls ?? 0) - (before[command]?.calls ?? 0), usec: (after[command]?.usec ?? 0) - (before[command]?.usec ?? 0) };
}

/** Keys of one shape (below) and the sum of their `MEMORY USAGE`. */
export interface KeyShapeMemory {
  keys: number;
  bytes: number;
}

/**
 * `MEMORY USAGE … SAMPLES 0` (exact: every element counted) of every key, found with SCAN
 * and summed by the key's shape: each part of its name that holds a digit or runs past 20
 * characters (ids, shards, buckets) becomes `*`, so `{p:ledger:17}:20414` counts under
 * `{p:ledger:*}:*` and every job hash under `{p:deliver-default}:deliver-default:*`.
 * It is the data's own size, without the allocator's rounding and the keyspace's entries
 * that `used_memory` also holds.
 */
export async function memoryByKeyShape(redis: Redis): Promise<Record<string, KeyShapeMemory>> {
  const shapes: Record<string, KeyShapeMemory> = {};
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "COUNT", 1000);
    cursor = next;
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.memory("USAGE", key, "SAMPLES", 0);
    const sizes = (await pipeline.exec()) ?? [];
    keys.forEach((key, index) => {
      const [error, bytes] = sizes[index] ?? [];
      // A key removed between the SCAN and its MEMORY USAGE (a job past its retention) answers null.
      if (error || typeof bytes !== "number") return;
      const shape = key.replace(/[^:{}]+/g, (part) => (/\d/.test(part) || part.length > 20 ? "*" : part));
      const entry = (shapes[shape] ??= { keys: 0, bytes: 0 });
      entry.keys += 1;
      entry.bytes += bytes;
    });
  } while (cursor !== "0");
  return shapes;
}

/** Deletes every key matching a pattern, found with SCAN; returns how many. */
export async function deleteKeys(redis: Redis, pattern: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.del(...keys);
  } while (cursor !== "0");
  return deleted;
}

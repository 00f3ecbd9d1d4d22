import type { Cluster, Redis } from "ioredis";
import { loadLua } from "../redis/load-lua.js";
import { sweepKey } from "../queue/queue-names.js";
import { legacyBullPrefix } from "./legacy-queue-layout.js";

// Fields the new hash already has win: a sweep of this release may have moved on meanwhile.
const adoptHashScript = loadLua(new URL("./adopt-legacy-sweep-hash.lua", import.meta.url));

/**
 * The sweep state of a release before its own hash tag (`{QUEUE_PREFIX}:sweep:…`), moved
 * under it (sweep/create-sweep-state.ts): each stream's checkpoint, figures and unrecovered ids.
 * Without it the first sweep after the upgrade would read the whole lookback again, and
 * recover anew what the earlier release recovered (the ledger starts empty at that
 * upgrade too: docs/deploy.md, Upgrading). Copies without overwriting, then forgets the
 * old keys, so processes starting together or a start cut short do no harm. Answers the
 * streams moved.
 */
export async function adoptLegacySweepState(redis: Redis | Cluster, queuePrefix: string): Promise<number> {
  const oldKey = (name: string) => `${legacyBullPrefix(queuePrefix)}:sweep:${name}`;
  const streamIds = await redis.smembers(oldKey("streams"));
  for (const streamId of streamIds) {
    const hash = Object.entries(await redis.hgetall(oldKey(`stream:${streamId}`))).flat();
    if (hash.length > 0) await redis.eval(adoptHashScript, 1, sweepKey(queuePrefix, `stream:${streamId}`), ...hash);
    // RESP2 answers [id, score, ...], RESP3 [[id, score], ...]: flat() reads both.
    const unrecovered = ((await redis.call("ZRANGE", oldKey(`unrecovered:${streamId}`), "0", "-1", "WITHSCORES")) as unknown[]).flat().map(String);
    const pairs: string[] = [];
    for (let at = 0; at < unrecovered.length; at += 2) pairs.push(unrecovered[at + 1]!, unrecovered[at]!);
    if (pairs.length > 0) await redis.zadd(sweepKey(queuePrefix, `unrecovered:${streamId}`), "NX", ...pairs);
    await redis.sadd(sweepKey(queuePrefix, "streams"), streamId);
    await redis.del(oldKey(`stream:${streamId}`), oldKey(`unrecovered:${streamId}`));
    await redis.srem(oldKey("streams"), streamId);
  }
  return streamIds.length;
}

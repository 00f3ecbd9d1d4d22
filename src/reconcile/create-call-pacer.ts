import type { Cluster, Redis } from "ioredis";

export interface CallPacer {
  /** Waits for the next free slot and takes it; slots are `1000 / ratePerSecond` ms apart. */
  take(): Promise<void>;
  /** No slot starts within `ms` from now (the tenant said 429, or its bucket is empty). */
  holdFor(ms: number): Promise<void>;
}

// One key, Redis's own clock: every process pacing through this key shares the pace, so
// three workers at RECONCILE_RATE_PER_SECOND=5 still make 5 calls a second in all.
// Times are whole milliseconds (13 digits, exact in Lua's number-to-string conversion).
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local start = math.max(now, free)
local after = start + tonumber(ARGV[1])
redis.call('SET', KEYS[1], after, 'PX', after - now + 1000)
return start - now
`;

const holdScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = now + tonumber(ARGV[1])
if after > tonumber(redis.call('GET', KEYS[1]) or '0') then
  redis.call('SET', KEYS[1], after, 'PX', after - now + 1000)
end
return 0
`;

type PacerCommands = {
  streamkeeperPaceTake(key: string, intervalMs: number): Promise<number>;
  streamkeeperPaceHold(key: string, ms: number): Promise<number>;
};

/**
 * Spaces tenant API calls evenly at `ratePerSecond` across every process (a reservation
 * per call, GCRA style). Even spacing, not bursts: the tenant's bucket (real-world.md,
 * `X-RateLimit-*`) then never empties because of us alone, so we pace before a 429 rather
 * than after it. The interval is rounded up to whole ms, so the pace never exceeds the rate.
 */
export function createCallPacer(redis: Redis | Cluster, key: string, ratePerSecond: number): CallPacer {
  const intervalMs = Math.max(1, Math.ceil(1000 / ratePerSecond));
  redis.defineCommand("streamkeeperPaceTake", { numberOfKeys: 1, lua: takeScript });
  redis.defineCommand("streamkeeperPaceHold", { numberOfKeys: 1, lua: holdScript });
  const commands = redis as unknown as PacerCommands;
  return {
    async take() {
      const waitMs = await commands.streamkeeperPaceTake(key, intervalMs);
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    },
    async holdFor(ms) {
      await commands.streamkeeperPaceHold(key, Math.max(0, Math.ceil(ms)));
    },
  };
}

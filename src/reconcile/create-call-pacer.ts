import type { Cluster, Redis } from "ioredis";

export interface CallPacer {
  /** Waits for the next free slot and takes it; slots are `1000 / ratePerSecond` ms apart, none inside a hold. */
  take(): Promise<void>;
  /** No slot starts within `ms` from now (the tenant said 429, or its bucket is empty). */
  holdFor(ms: number): Promise<void>;
}

// KEYS: the next free slot (ms since epoch, Redis's clock), the hold (its PTTL is what is
// left of it). Every process pacing through these keys shares the pace, so three workers
// at RECONCILE_RATE_PER_SECOND=5 still make 5 calls a second in all. Whole milliseconds
// (13 digits) stay exact through Lua's number-to-string conversion.
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local start = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local held = redis.call('PTTL', KEYS[2])
if held > 0 then start = math.max(start, now + held) end
local after = start + tonumber(ARGV[1])
redis.call('SET', KEYS[1], after, 'PX', after - now + 1000)
return start - now
`;

const holdScript = `
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
`;

type PacerCommands = {
  streamkeeperPaceTake(nextKey: string, holdKey: string, intervalMs: number): Promise<number>;
  streamkeeperPaceHold(holdKey: string, ms: number): Promise<number>;
};

/**
 * Spaces tenant API calls evenly at `ratePerSecond` across every process (a reservation
 * per call, GCRA style). Even spacing, not bursts: the tenant's bucket (real-world.md,
 * `X-RateLimit-*`) then never empties because of us alone, so we pace before a 429 rather
 * than after it. The interval is rounded up to whole ms, so the pace never exceeds the rate.
 * A slot reserved before a hold began is given up at its time and taken again after the
 * hold, so a 429 stops every call already waiting instead of letting each one hit it.
 */
export function createCallPacer(redis: Redis | Cluster, keyBase: string, ratePerSecond: number): CallPacer {
  const intervalMs = Math.max(1, Math.ceil(1000 / ratePerSecond));
  const nextKey = `${keyBase}:next`;
  const holdKey = `${keyBase}:hold`;
  redis.defineCommand("streamkeeperPaceTake", { numberOfKeys: 2, lua: takeScript });
  redis.defineCommand("streamkeeperPaceHold", { numberOfKeys: 1, lua: holdScript });
  const commands = redis as unknown as PacerCommands;
  return {
    async take() {
      for (;;) {
        const waitMs = await commands.streamkeeperPaceTake(nextKey, holdKey, intervalMs);
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
        if ((await redis.pttl(holdKey)) <= 0) return;
      }
    },
    async holdFor(ms) {
      const hold = Math.ceil(ms);
      if (hold > 0) await commands.streamkeeperPaceHold(holdKey, hold);
    },
  };
}

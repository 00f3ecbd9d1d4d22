import type { Cluster, Redis } from "ioredis";

export interface CallPacer {
  /** Waits for the next free slot and takes it; slots are `1000 / rate` ms apart, none inside a hold. */
  take(): Promise<void>;
  /** No slot starts within `ms` from now (the tenant said 429, or its bucket is empty). */
  holdFor(ms: number): Promise<void>;
  /**
   * The tenant's bucket refills `refillPerSecond` (estimated from its headers,
   * create-refill-estimate.ts): from now on every process paces at `share` of it, capped by
   * `capPerSecond`. Written to Redis only when it changes.
   */
  noteAllowance(refillPerSecond: number): Promise<void>;
  /** The calls per second this process last paced at (for logs). */
  ratePerSecond(): number;
}

export interface CallPacerOptions {
  /** RECONCILE_RATE_SHARE: the part of the tenant's allowance we may spend (others keep the rest). */
  share: number;
  /** RECONCILE_RATE_PER_SECOND: a further cap, when set. */
  capPerSecond?: number;
  /**
   * The pace before any answer told us the allowance. @defaultValue 5 (the old fixed
   * default, within any tenant's limit), or the cap when lower
   */
  initialPerSecond?: number;
}

// KEYS: the next free slot (ms since epoch, Redis's clock), the hold (its PTTL is what is
// left of it), the learned interval (ms). Every process pacing through these keys shares
// one pace, so three workers still make `share` of the allowance in all, not three times it.
// Whole milliseconds (13 digits) stay exact through Lua's number-to-string conversion.
// No slot is reserved further ahead than ARGV[2] ms (or two intervals): a slot keeps the
// interval it was reserved at, so fifty callers reserving at a slow start pace would hold
// it for seconds after the pace rose. A caller told to come back (a negative answer)
// reserves nothing and asks again when the reserved slots have moved on.
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(redis.call('GET', KEYS[3]) or ARGV[1])
local start = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local held = redis.call('PTTL', KEYS[2])
if held > 0 then start = math.max(start, now + held) end
local ahead = math.max(tonumber(ARGV[2]), 2 * interval)
if start - now > ahead then return -(start - now - ahead) end
local after = start + interval
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
  streamkeeperPaceTake(nextKey: string, holdKey: string, intervalKey: string, defaultIntervalMs: number, aheadMs: number): Promise<number>;
  streamkeeperPaceHold(holdKey: string, ms: number): Promise<number>;
};

/** How far ahead slots are reserved (see takeScript). */
const reserveAheadMs = 1000;

/** A learned allowance is kept this long without a fresh answer; then the initial pace applies again. */
const allowanceTtlMs = 10 * 60_000;

/**
 * Spaces tenant API calls evenly across every process (a reservation per call, GCRA style),
 * at `share` of the tenant's refill rate (CONTRACT.md, "Pacing"). Even spacing,
 * not bursts: the tenant's bucket (real-world.md, `X-RateLimit-*`) then never empties because
 * of us, so we pace before a 429 rather than after it. Intervals are rounded up to whole ms,
 * so the pace never exceeds the rate. A slot reserved before a hold began is given up at its
 * time and taken again after the hold, so a 429 stops every call already waiting.
 */
export function createCallPacer(redis: Redis | Cluster, keyBase: string, options: CallPacerOptions): CallPacer {
  const cap = options.capPerSecond;
  const capped = (perSecond: number) => (cap === undefined ? perSecond : Math.min(perSecond, cap));
  const intervalOf = (perSecond: number) => Math.max(1, Math.ceil(1000 / perSecond));
  const initialMs = intervalOf(capped(options.initialPerSecond ?? 5));
  const nextKey = `${keyBase}:next`;
  const holdKey = `${keyBase}:hold`;
  const intervalKey = `${keyBase}:interval`;
  let intervalMs = initialMs;
  let written = 0;
  redis.defineCommand("streamkeeperPaceTake", { numberOfKeys: 3, lua: takeScript });
  redis.defineCommand("streamkeeperPaceHold", { numberOfKeys: 1, lua: holdScript });
  const commands = redis as unknown as PacerCommands;
  return {
    async take() {
      for (;;) {
        const waitMs = await commands.streamkeeperPaceTake(nextKey, holdKey, intervalKey, initialMs, reserveAheadMs);
        if (waitMs < 0) {
          // Spread the callers that come back, so they do not all ask at the same moment.
          await new Promise((resolve) => setTimeout(resolve, -waitMs + Math.random() * intervalMs));
          continue;
        }
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
        if ((await redis.pttl(holdKey)) <= 0) return;
      }
    },
    async holdFor(ms) {
      const hold = Math.ceil(ms);
      if (hold > 0) await commands.streamkeeperPaceHold(holdKey, hold);
    },
    async noteAllowance(refillPerSecond) {
      if (!(refillPerSecond > 0)) return;
      const next = intervalOf(capped(refillPerSecond * options.share));
      // One write per change (and a refresh well before the key expires), not one per call.
      if (next === intervalMs && Date.now() - written < allowanceTtlMs / 2) return;
      intervalMs = next;
      written = Date.now();
      await redis.set(intervalKey, next, "PX", allowanceTtlMs);
    },
    ratePerSecond: () => 1000 / intervalMs,
  };
}

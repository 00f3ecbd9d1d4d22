import type { Cluster, Redis } from "ioredis";
import type { PaceEvidence } from "./read-pace-evidence.js";

/** The shared pace after one answer: calls per second, and whether that answer grew it, cut it or left it. */
export interface PaceStep {
  perSecond: number;
  step: "grew" | "cut" | "held";
}

export interface CallPacer {
  /** Waits for the next free slot and takes it; slots are `1000 / rate` ms apart, none inside a hold. */
  take(): Promise<void>;
  /** No slot starts within `ms` from now (the tenant said 429, or its bucket is empty). */
  holdFor(ms: number): Promise<void>;
  /**
   * Moves the pace every process shares by one answer's evidence (read-pace-evidence.ts):
   * room grows it toward the ceiling, a shrinking room cuts it by a fifth, a 429 by half
   * (at most one cut a second, however many answers in flight show the same shortage).
   */
  note(evidence: PaceEvidence): Promise<PaceStep>;
  /** The calls per second this process last paced at (for logs). */
  ratePerSecond(): number;
}

export interface CallPacerOptions {
  /** RECONCILE_RATE_PER_SECOND: the start pace is never above it. */
  capPerSecond?: number;
  /**
   * The pace before any answer showed the tenant's limits. @defaultValue 5 (within any
   * tenant's limit), or the cap when lower
   */
  initialPerSecond?: number;
  /** How fast the pace grows while the tenant shows room: this part of the ceiling per second. @defaultValue 0.5 */
  growthPerSecond?: number;
}

// KEYS: the next free slot (ms since epoch, Redis's clock, to a tenth of a ms), the hold (its
// PTTL is what is left of it), the interval (ms, to a tenth). Every process pacing through
// these keys shares one pace, so three workers still make their share in all, not three
// times it. Tenths of a ms keep a pace of 47.5/s from rounding down to 45/s; 13 digits of
// ms and one decimal stay exact through Lua's number-to-string conversion (14 digits).
// No slot is reserved further ahead than ARGV[2] ms (or two intervals): a slot keeps the
// interval it was reserved at, so fifty callers reserving at a slow start pace would hold
// it for seconds after the pace rose. A caller told to come back (a negative answer)
// reserves nothing and asks again when the reserved slots have moved on.
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(redis.call('GET', KEYS[3]) or ARGV[1])
local start = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local held = redis.call('PTTL', KEYS[2])
if held > 0 then start = math.max(start, now + held) end
local ahead = math.max(tonumber(ARGV[2]), 2 * interval)
if start - now > ahead then return -math.ceil(start - now - ahead) end
local after = start + interval
redis.call('SET', KEYS[1], string.format('%.1f', after), 'PX', math.ceil(after - now) + 1000)
return math.ceil(start - now)
`;

const holdScript = `
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
`;

// KEYS: the pace (a hash: rate, grownAt, cutAt), the interval the take script reads.
// ARGV: verdict, ceiling (calls/s, 0 when none is shown), start rate, growth (part of the
// ceiling per second), cut factors for a shrinking room and for a 429, the least time
// between two cuts (ms), the lowest pace, how long the pace is kept without answers (ms).
// Additive increase, multiplicative decrease: the pace follows what the tenant shows now,
// so no reading of the past can keep it low.
const noteScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local verdict = ARGV[1]
local ceiling = tonumber(ARGV[2])
local rate = tonumber(redis.call('HGET', KEYS[1], 'rate') or ARGV[3])
local grownAt = tonumber(redis.call('HGET', KEYS[1], 'grownAt') or now)
local cutAt = tonumber(redis.call('HGET', KEYS[1], 'cutAt') or '0')
local lowest = tonumber(ARGV[8])
if ceiling > 0 then
  lowest = math.min(lowest, ceiling)
  if rate > ceiling then rate = ceiling end
end
local step = 'held'
if verdict == 'room' and ceiling > 0 and rate < ceiling then
  rate = math.min(ceiling, rate + ceiling * tonumber(ARGV[4]) * math.min(now - grownAt, 1000) / 1000)
  step = 'grew'
elseif (verdict == 'short' or verdict == 'refused') and now - cutAt >= tonumber(ARGV[7]) then
  local factor = ARGV[5]
  if verdict == 'refused' then factor = ARGV[6] end
  rate = math.max(lowest, rate * tonumber(factor))
  cutAt = now
  step = 'cut'
end
grownAt = now
local ttl = tonumber(ARGV[9])
redis.call('HSET', KEYS[1], 'rate', string.format('%.4f', rate), 'grownAt', grownAt, 'cutAt', cutAt)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[2], string.format('%.1f', math.ceil(10000 / rate) / 10), 'PX', ttl)
return { string.format('%.4f', rate), step }
`;

type PacerCommands = {
  streamkeeperPaceTake(nextKey: string, holdKey: string, intervalKey: string, defaultIntervalMs: string, aheadMs: number): Promise<number>;
  streamkeeperPaceHold(holdKey: string, ms: number): Promise<number>;
  streamkeeperPaceNote(stateKey: string, intervalKey: string, ...args: Array<string | number>): Promise<[string, PaceStep["step"]]>;
};

/** How far ahead slots are reserved (see takeScript). */
const reserveAheadMs = 1000;

/** A pace is kept this long without a fresh answer; then the initial pace applies again. */
const paceTtlMs = 10 * 60_000;

/** A shrinking room cuts the pace to this part of it; a 429 to that one. */
const cutWhenShort = 0.8;
const cutWhenRefused = 0.5;
/** The least time between two cuts: the answers in flight when the tenant ran short all show it. */
const cutEveryMs = 1000;
/** The pace never falls below this (calls per second), unless a limit shown is lower. */
const lowestPerSecond = 0.5;

/**
 * Spaces tenant API calls evenly across every process (a reservation per call, GCRA style),
 * at a pace all of them move by what the tenant's answers show (docs/operating.md#how-the-recovery-pace-works;
 * docs/operating.md, "How the recovery pace works"). Even spacing, not bursts: the bucket
 * then never empties because of us, so we pace before a 429 rather than after it. A slot
 * reserved before a hold began is given up at its time and taken again after the hold, so
 * a 429 stops every call already waiting.
 */
export function createCallPacer(redis: Redis | Cluster, keyBase: string, options: CallPacerOptions = {}): CallPacer {
  const cap = options.capPerSecond;
  const initial = Math.min(options.initialPerSecond ?? 5, cap ?? Infinity);
  const tenths = (perSecond: number) => (Math.ceil(10_000 / perSecond) / 10).toFixed(1);
  const nextKey = `${keyBase}:next`;
  const holdKey = `${keyBase}:hold`;
  const intervalKey = `${keyBase}:interval`;
  const stateKey = `${keyBase}:aimd`;
  let rate = initial;
  redis.defineCommand("streamkeeperPaceTake", { numberOfKeys: 3, lua: takeScript });
  redis.defineCommand("streamkeeperPaceHold", { numberOfKeys: 1, lua: holdScript });
  redis.defineCommand("streamkeeperPaceNote", { numberOfKeys: 2, lua: noteScript });
  const commands = redis as unknown as PacerCommands;
  return {
    async take() {
      for (;;) {
        const waitMs = await commands.streamkeeperPaceTake(nextKey, holdKey, intervalKey, tenths(initial), reserveAheadMs);
        if (waitMs < 0) {
          // Spread the callers that come back, so they do not all ask at the same moment.
          await new Promise((resolve) => setTimeout(resolve, -waitMs + Math.random() * (1000 / rate)));
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
    async note(evidence) {
      const [perSecond, step] = await commands.streamkeeperPaceNote(
        stateKey,
        intervalKey,
        evidence.verdict,
        evidence.ceiling?.perSecond ?? 0,
        initial,
        options.growthPerSecond ?? 0.5,
        cutWhenShort,
        cutWhenRefused,
        cutEveryMs,
        lowestPerSecond,
        paceTtlMs,
      );
      rate = Number(perSecond);
      return { perSecond: rate, step };
    },
    ratePerSecond: () => rate,
  };
}

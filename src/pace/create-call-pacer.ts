import type { Cluster, Redis } from "ioredis";
import { loadLua } from "../redis/load-lua.js";
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

// One pace shared by every process (pace-take.lua reserves a slot, pace-hold.lua holds
// every call after a 429, pace-note.lua moves the pace by an answer): their keys,
// arguments and replies are written at their top.
const takeScript = loadLua(new URL("./pace-take.lua", import.meta.url));
const holdScript = loadLua(new URL("./pace-hold.lua", import.meta.url));
const noteScript = loadLua(new URL("./pace-note.lua", import.meta.url));

type PacerCommands = {
  streamkeeperPaceTake(nextKey: string, holdKey: string, intervalKey: string, defaultIntervalMs: string, aheadMs: number): Promise<number>;
  streamkeeperPaceHold(holdKey: string, ms: number): Promise<number>;
  streamkeeperPaceNote(stateKey: string, intervalKey: string, ...args: Array<string | number>): Promise<[string, PaceStep["step"]]>;
};

/** How far ahead slots are reserved (see pace-take.lua). */
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
 * at a pace all of them move by what the tenant's answers show (docs/operating.md#how-the-recovery-pace-works). Even spacing, not bursts: the bucket
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

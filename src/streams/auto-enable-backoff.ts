/** The longest wait between two auto-enables of one stream, and how long a stream must stay enabled to end a streak. */
export const maxAutoEnableBackoffMs = 3_600_000;

export interface AutoEnableStreak {
  /** Auto-enables since the stream last stayed enabled for `maxAutoEnableBackoffMs`. */
  enables: number;
  /** When the last of them happened, ms since the epoch (0: none). */
  lastEnabledAt: number;
}

/**
 * When a stream found disabled may be enabled again (ms since the epoch; 0: at once).
 * The first time at once: every minute disabled is lost data. If the tenant disables it
 * again (its endpoint still fails: 500 consecutive failed deliveries, docs/tenant.md#webhook-delivery),
 * re-enabling at every check would fail those deliveries in a loop, so each further
 * auto-enable waits twice as long as the one before, from 2 intervals to an hour.
 */
export function nextAutoEnableAt(streak: AutoEnableStreak, intervalMs: number): number {
  if (streak.enables === 0) return 0;
  return streak.lastEnabledAt + Math.min(intervalMs * 2 ** streak.enables, maxAutoEnableBackoffMs);
}

/** A streak ends once a check finds the stream still enabled an hour after its last auto-enable. */
export function streakAfterEnabledCheck(streak: AutoEnableStreak, now: number): AutoEnableStreak {
  return streak.enables > 0 && now - streak.lastEnabledAt >= maxAutoEnableBackoffMs ? { enables: 0, lastEnabledAt: 0 } : streak;
}

/** What the emulator's API answered one caller: its requests accepted and refused with 429. */
export interface CallerCounts {
  caller: string;
  accepted: number;
  refused: number;
  /** Accepted requests per UNIX second (one window of a `window` limit of one second). */
  acceptedPerSecond: Record<string, number>;
  /** The fewest requests its accepted ones left in the tenant's bucket (`X-RateLimit-Remaining`). */
  lowestRemaining?: number;
}

export interface CallLog {
  record(caller: string, allowed: boolean, now?: number, remaining?: number): void;
  all(): CallerCounts[];
}

/** Counts the emulator keeps of its API calls, for tests and benchmarks (`GET /emulator/calls`). */
export function createCallLog(): CallLog {
  const callers = new Map<string, CallerCounts>();
  return {
    record(caller, allowed, now = Date.now(), remaining) {
      let counts = callers.get(caller);
      if (!counts) callers.set(caller, (counts = { caller, accepted: 0, refused: 0, acceptedPerSecond: {} }));
      if (!allowed) {
        counts.refused++;
        return;
      }
      counts.accepted++;
      if (remaining !== undefined) counts.lowestRemaining = Math.min(counts.lowestRemaining ?? remaining, remaining);
      const second = String(Math.floor(now / 1000));
      counts.acceptedPerSecond[second] = (counts.acceptedPerSecond[second] ?? 0) + 1;
    },
    all: () => [...callers.values()].map((counts) => ({ ...counts, acceptedPerSecond: { ...counts.acceptedPerSecond } })),
  };
}

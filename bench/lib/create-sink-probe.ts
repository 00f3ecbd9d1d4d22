import type { SinkStats } from "../processes/sink-server.js";

export type SinkProbe = ReturnType<typeof createSinkProbe>;

/** The bench's side of the sink process (bench/processes/sink-server.ts): its counts, windows and waits. */
export function createSinkProbe(sinkUrl: string) {
  const stats = async () => (await (await fetch(`${sinkUrl}/_bench/stats`)).json()) as SinkStats;
  /** Polls until the sink has `unique` distinct ids (true) or `timeoutMs` passes (false). */
  const until = async (unique: number, timeoutMs: number): Promise<boolean> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await stats()).unique >= unique) return true;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return false;
  };
  return {
    stats,
    until,
    async mark() {
      await fetch(`${sinkUrl}/_bench/mark`, { method: "POST" });
    },
    /** Forgets every id: each run compares the sink with its own, freshly flushed, ledger. */
    async reset() {
      await fetch(`${sinkUrl}/_bench/reset`, { method: "POST" });
    },
    /**
     * Once the load stopped, waits until the sink has every event `stored()` counts (the
     * ledger: a SCAN per poll would slow Redis down, so it is counted once, then once more
     * for requests that were still being stored at the first count).
     */
    async untilAllOf(stored: () => Promise<number>, timeoutMs: number): Promise<boolean> {
      return (await until(await stored(), timeoutMs)) && (await until(await stored(), timeoutMs));
    },
  };
}

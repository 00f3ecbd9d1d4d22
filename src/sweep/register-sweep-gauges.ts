import { onScrape, sweepLag, tenantUnrecoveredDeliveries } from "../metrics/registry.js";
import type { StreamSweepStatus } from "./create-sweep-state.js";

/**
 * Makes `/metrics` read the sweep's state at scrape time: `streamkeeper_sweep_lag_seconds`
 * and `streamkeeper_tenant_unrecovered_deliveries` per stream. Every worker reports the
 * shared state, so the lag keeps growing on the others when the sweeping process dies.
 * `describe` must fail fast while Redis is away (the scrape answers anyway). Returns the removal.
 */
export function registerSweepGauges(describe: (now: number) => Promise<StreamSweepStatus[]>): () => void {
  return onScrape(async () => {
    try {
      const now = Date.now();
      const streams = await describe(now);
      sweepLag.reset();
      tenantUnrecoveredDeliveries.reset();
      for (const stream of streams) {
        // A stream with no checkpoint yet (its first window never completed) has a lag too,
        // counted from the start of its first lookback, so the alert fires (create-sweep-state.ts).
        if (stream.lagSeconds !== null) sweepLag.set({ stream: stream.streamId }, stream.lagSeconds);
        tenantUnrecoveredDeliveries.set({ stream: stream.streamId }, stream.unrecovered);
      }
      return true;
    } catch {
      return false;
    }
  });
}

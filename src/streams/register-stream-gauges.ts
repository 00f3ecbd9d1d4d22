import { onScrape, streamAutoEnableBackoff, streamEnabled } from "../metrics/registry.js";
import { nextAutoEnableAt } from "./auto-enable-backoff.js";
import type { StreamHealthStore } from "./stream-health-store.js";

/**
 * Makes `/metrics` report the last stream check, read from Redis at scrape time:
 * `streamkeeper_stream_enabled{stream}` and, with auto-enable,
 * `streamkeeper_stream_auto_enable_backoff_seconds{stream}`. Every worker reports the
 * same findings, whichever of them made the check. Returns the removal.
 */
export function registerStreamGauges(store: StreamHealthStore, intervalMs: number, autoEnable: boolean): () => void {
  const remove = onScrape(async () => {
    try {
      const health = await store.read();
      const now = Date.now();
      streamEnabled.reset();
      streamAutoEnableBackoff.reset();
      for (const [stream, found] of health) {
        streamEnabled.set({ stream }, found.status === "enabled" ? 1 : 0);
        if (autoEnable) {
          const waitMs = found.status === "disabled" ? Math.max(0, nextAutoEnableAt(found, intervalMs) - now) : 0;
          streamAutoEnableBackoff.set({ stream }, waitMs / 1000);
        }
      }
      return true;
    } catch {
      // Unknown while Redis is away: absent rather than stale (redis_up says why).
      streamEnabled.reset();
      streamAutoEnableBackoff.reset();
      return false;
    }
  });
  return () => {
    remove();
    streamEnabled.reset();
    streamAutoEnableBackoff.reset();
  };
}

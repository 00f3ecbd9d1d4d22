import type { FreshnessReader, RouteActivity } from "./create-freshness-reader.js";

export interface ReuseOptions {
  /** A read younger than this is answered as it is. @defaultValue 2000 */
  freshMs?: number;
  /** A read younger than this is answered at once while a new one runs; older, the caller waits for the new one. @defaultValue 30000 */
  usableMs?: number;
}

/**
 * Keeps the freshness sketch off the request path of `GET /admin/overview`: reading it
 * parses thousands of hash fields with many routes (docs/benchmarks.md, "Operator view"),
 * so one read serves every page polling within `freshMs`, and a read up to `usableMs` old
 * is answered at once while the next one runs (the page polls every 5 s: it shows what
 * the previous read found, never older than one refresh and a read). Only one read runs at
 * a time, whatever the number of open pages.
 */
export function reuseRecentReads(reader: FreshnessReader, { freshMs = 2000, usableMs = 30_000 }: ReuseOptions = {}): FreshnessReader {
  let last: { at: number; routes: string; activity: Map<string, RouteActivity> } | undefined;
  let running: Promise<Map<string, RouteActivity>> | undefined;

  const refresh = (routes: string[]) => {
    running ??= (async () => {
      const at = Date.now();
      try {
        const activity = await reader.read(routes, at);
        last = { at, routes: routes.join(), activity };
        return activity;
      } finally {
        running = undefined;
      }
    })();
    return running;
  };

  return {
    async read(routes, now) {
      const usable = last !== undefined && last.routes === routes.join() ? now - last.at : Infinity;
      if (usable < freshMs) return last!.activity;
      if (usable < usableMs) {
        // Its failure shows at the next call that must wait; this one answers what it has.
        refresh(routes).catch(() => {});
        return last!.activity;
      }
      return refresh(routes);
    },
  };
}

/** A downstream handler (README.md#routes). */
export interface Route {
  /** Letters, digits, `_` and `-`: it names the route's queue and metric label. */
  name: string;
  /** Event type patterns: `*`, a prefix such as `user.*`, or an exact type. */
  match: string[];
  url: string;
  headers: Record<string, string>;
  /** Standard Webhooks signing secret (`whsec_<base64>` or any string). */
  secret?: string;
  timeoutMs: number;
  /** Unset: no count; DISPATCH_RETRY_WINDOW_SECONDS alone ends the retries. */
  maxAttemptsPerEvent?: number;
  concurrency: number;
  /**
   * Never hand this route an older state of an entity after a newer one, nor two states
   * of one entity at once (README.md#routes). @defaultValue false
   */
  dropStale?: boolean;
  /** At most this many deliveries per second, across every worker process (README.md#routes). */
  ratePerSecond?: number;
  /**
   * The route's freshness objective: 99% of live events delivered within this many seconds
   * of their `time` (README.md#routes; docs/operating.md, "Freshness").
   */
  freshnessSeconds?: number;
  /**
   * An event whose `time` is more than this many seconds before its arrival is late on this
   * route: it waits in the route's late lane, behind live events (docs/operating.md, "Live
   * and late lanes"). @defaultValue LIVE_WINDOW_SECONDS
   */
  liveWindowSeconds?: number;
  /**
   * A MongoDB-style query over the whole CloudEvent (dotted paths, the operators of
   * route-filter.ts): only the events it selects go to the route; the others are `filtered`.
   */
  filter?: Record<string, unknown>;
  /** `drop` keeps the tenant's test events (`a0purpose: "test"`) off the route. @defaultValue "deliver" */
  testEvents?: "deliver" | "drop";
  /** A JSONata expression over the CloudEvent whose result is the JSON body sent (route-transform.ts). */
  transform?: string;
}

/** `*` matches every type, `user.*` every type under `user.`, anything else itself. */
export function routeMatches(route: Pick<Route, "match">, type: string): boolean {
  return route.match.some((pattern) =>
    pattern === "*" ? true : pattern.endsWith(".*") ? type.startsWith(pattern.slice(0, -1)) : pattern === type,
  );
}

/** The names of the routes an event type goes to, for the event store (which knows no routes). */
export function routesMatching(routes: Route[]): (type: string) => string[] {
  return (type) => routes.filter((route) => routeMatches(route, type)).map((route) => route.name);
}

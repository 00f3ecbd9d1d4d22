import { Counter } from "prom-client";
import { createFastHistogram } from "./create-fast-histogram.js";
import { registry } from "./registry.js";

/**
 * Freshness (docs/operating.md#freshness; README.md#routes): how old an event is when
 * a route answers 2xx for it, from the event's `time`. Buckets from 50 ms to a day, with
 * the objectives operators promise (1 s, 5 s, 30 s, a minute) among them.
 */
export const deliveryLag = createFastHistogram({
  name: "streamkeeper_delivery_lag_seconds",
  help: "Age of an event (now minus its time) when a route answered 2xx for it, by route, origin (webhook, reconcile, pull, replay) and lane (live, or late: waited behind live events); events without a time are not counted",
  labelNames: ["route", "origin", "lane"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
  registers: [registry],
});

/**
 * Live events (webhook, pull, in the live lane) a route with `freshnessSeconds` got later
 * than that: the alert StreamkeeperFreshnessMissed divides it by the live deliveries of
 * `streamkeeper_delivery_lag_seconds_count` (deploy/prometheus/alerts.yml).
 */
export const freshnessMissed = new Counter({
  name: "streamkeeper_delivery_freshness_missed_total",
  help: "Live events (origin webhook or pull, live lane) delivered to a route later than its freshnessSeconds after their time",
  labelNames: ["route"] as const,
  registers: [registry],
});

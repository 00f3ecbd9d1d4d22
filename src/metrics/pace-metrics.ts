import { Counter, Gauge } from "prom-client";
import { registry } from "./registry.js";

/** The pace of tenant calls this process last set, labelled with the limit it believes binds (only that label is present). */
export const mgmtApiPacePerSecond = new Gauge({
  name: "streamkeeper_mgmt_api_pace_per_second",
  help: "Calls per second the tenant calls of every process are paced at, by the limit believed to bind (bucket: our share of the tenant's bucket, quota: our client's quota, cap: RECONCILE_RATE_PER_SECOND)",
  labelNames: ["limit"] as const,
  registers: [registry],
});

export const mgmtApiPaceCuts = new Counter({
  name: "streamkeeper_mgmt_api_pace_cuts_total",
  help: "Times the pace of tenant calls was cut, by reason (rate_limited: a 429; short: the bucket or quota ran low or empty)",
  labelNames: ["reason"] as const,
  registers: [registry],
});

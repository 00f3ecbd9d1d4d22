import { Gauge } from "prom-client";
import { registry } from "../metrics/registry.js";

export const legacyDeliveryJobsGauge = new Gauge({
  name: "streamkeeper_legacy_delivery_jobs",
  labelNames: ["route"] as const,
  help: "delivery jobs still under the key layout of a release before per-queue hash tags: a worker of this release drains them and moves their dead letters (docs/deploy.md, Upgrading); 0 normally",
  registers: [registry],
});

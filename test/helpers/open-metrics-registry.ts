import { Registry } from "prom-client";

/** A registry exporting OpenMetrics (prom-client's typings give its constructor no argument). */
export function openMetricsRegistry(): Registry {
  const registry = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  return registry as unknown as Registry;
}

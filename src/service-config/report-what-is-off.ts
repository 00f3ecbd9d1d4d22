import type { Logger } from "../logger.js";
import type { ServiceConfig } from "./service-config.js";

/** The tenant settings reconcile and the sweep need, as the start message names them. */
export const tenantSettingsHint = "set TENANT_DOMAIN or MGMT_API_BASE_URL, MGMT_CLIENT_ID, MGMT_CLIENT_SECRET";

/**
 * Says once, at start, what this service will not do and which settings turn it on
 * (issue 18: a service that said nothing let a shell's settings take the blame).
 */
export function reportWhatIsOff(config: ServiceConfig, logger: Logger): string[] {
  const off: string[] = [];
  if (config.role !== "receiver") {
    if (!config.tenantConfigured) off.push(`reconcile and sweep are off: ${tenantSettingsHint}`);
    else if (!config.sweep.configured) {
      off.push(config.sweep.intervalSeconds === 0 ? "the sweep is off: RECONCILE_SWEEP_INTERVAL_SECONDS=0" : "the sweep is off: set PUBLIC_URL or RECONCILE_SWEEP_STREAMS");
    }
    if (config.routes.length === 0) off.push("no downstream routes: set ROUTES_FILE or DOWNSTREAM_URL; events are stored but delivered nowhere");
  }
  for (const line of off) logger.warn(line);
  return off;
}

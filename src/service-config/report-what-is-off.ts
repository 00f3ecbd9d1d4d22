import { tenantSettings, type Env } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { publishedSweepPlan, type ServiceConfig } from "./service-config.js";

type OffEnv = Pick<Env, "STREAM_WATCH_INTERVAL_SECONDS" | "STREAM_AUTO_ENABLE" | "RECONCILE_SWEEP_OVERLAP_SECONDS">;

/**
 * Says once, at start, what this service will not do and which settings turn it on
 * (a service that said nothing let a shell's settings take the blame). The one
 * place that says it: the sweeper and the stream watch stay quiet when they are off.
 */
export function reportWhatIsOff(config: ServiceConfig, env: OffEnv, logger: Logger): string[] {
  const off: string[] = [];
  if (config.role !== "receiver") {
    // The stream watch reads the swept streams through the tenant's API: off with either.
    const watchIdle = env.STREAM_AUTO_ENABLE ? "; STREAM_AUTO_ENABLE has no effect" : "";
    const plan = publishedSweepPlan(config);
    if (!plan.on && plan.whyOff === "no_tenant") off.push(`reconcile, the sweep and the stream watch are off: set ${tenantSettings}${watchIdle}`);
    else if (!plan.on && plan.whyOff === "no_sweep") off.push(`the sweep and the stream watch are off: set PUBLIC_URL or RECONCILE_SWEEP_STREAMS${watchIdle}`);
    else {
      if (!plan.on) off.push("the sweep is off: RECONCILE_SWEEP_INTERVAL_SECONDS=0");
      // Allowed, but a delivery that turns failed after its window was read is then never found.
      else if (env.RECONCILE_SWEEP_OVERLAP_SECONDS === 0) off.push("the sweep reads no window twice: RECONCILE_SWEEP_OVERLAP_SECONDS=0, so a delivery the tenant gives up on after the sweep read its window is never found; set it to a few minutes (default 600)");
      if (env.STREAM_WATCH_INTERVAL_SECONDS === 0) off.push(`the stream watch is off: STREAM_WATCH_INTERVAL_SECONDS=0${watchIdle}`);
    }
  }
  for (const line of off) logger.warn(line);
  return off;
}

import { tenantConfigured, type Config } from "../config.js";
import { publishedSweepPlan } from "../service-config/service-config.js";
import { sweepPlan, sweepVerdict, type SweepOff, type SweepPlan } from "../streams/swept-streams.js";
import type { EventStream } from "../tenant/event-stream.js";
import { readServiceConfig } from "./read-service-config.js";

export type SweptAnswer =
  | { swept: true }
  /** The stream is not in scope, or the sweep is off (SweepOff says why). */
  | { swept: false; reason: "not_named" | "points_elsewhere" | SweepOff };

/** What `streams list` prints after "no" for each reason: the setting behind it. */
export const notSweptBecause: Record<Extract<SweptAnswer, { swept: false }>["reason"], string> = {
  not_named: "not in RECONCILE_SWEEP_STREAMS",
  points_elsewhere: "endpoint not under PUBLIC_URL",
  no_tenant: "the service has no tenant settings",
  no_sweep: "set RECONCILE_SWEEP_STREAMS or PUBLIC_URL",
  sweep_off: "RECONCILE_SWEEP_INTERVAL_SECONDS=0",
};

/**
 * Whether the running service sweeps a stream, for commands (CONTRACT.md: commands use the
 * running service's configuration): its published sweep scope (issue 18). With no service
 * configuration to read, this shell's own settings, said in one line.
 */
export async function sweptByService(config: Config, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<(stream: EventStream) => SweptAnswer> {
  const service = await readServiceConfig(config);
  let plan: SweepPlan;
  if (service.config) plan = publishedSweepPlan(service.config);
  else {
    say(`note: ${service.why}; SWEPT follows this shell's RECONCILE_SWEEP_STREAMS, PUBLIC_URL and RECONCILE_SWEEP_INTERVAL_SECONDS`);
    plan = sweepPlan(config.env, tenantConfigured(config));
  }
  return (stream) => {
    if (!plan.scope) return { swept: false, reason: "no_sweep" };
    const verdict = sweepVerdict(stream, plan.scope);
    if (!verdict.swept) return verdict;
    return plan.on ? verdict : { swept: false, reason: plan.whyOff };
  };
}

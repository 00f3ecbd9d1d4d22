import { publishedSweepPlan } from "../service-config/service-config.js";
import { sweepVerdict, type SweepOff } from "../streams/swept-streams.js";
import type { EventStream } from "../tenant/event-stream.js";
import type { ServiceClient } from "./service-client.js";

export type SweptAnswer =
  | { swept: true }
  /** The stream is not in scope, or the sweep is off (SweepOff says why). */
  | { swept: false; reason: "not_named" | "points_elsewhere" | SweepOff }
  /** No service answered, or it refused this command's admin token: this shell's settings prove nothing. */
  | { swept: null; reason: "no_service" | "no_token" };

/** What `streams list` prints after "no" for each reason: the setting behind it. */
export const notSweptBecause: Record<Exclude<SweptAnswer, { swept: true }>["reason"], string> = {
  not_named: "not in RECONCILE_SWEEP_STREAMS",
  points_elsewhere: "endpoint not under PUBLIC_URL",
  no_tenant: "the service has no tenant settings",
  no_sweep: "set RECONCILE_SWEEP_STREAMS or PUBLIC_URL",
  sweep_off: "RECONCILE_SWEEP_INTERVAL_SECONDS=0",
  no_service: "no service answers",
  no_token: "the service refused the admin token",
};

/**
 * Whether the running service sweeps a stream, for `streams list`: the sweep scope the
 * service itself reports (GET /admin/config), never this shell's settings. With no service
 * answering, or one that refuses this command's token, every stream is `unknown` and `say`
 * gets the one line that says why: listing is the command's job, SWEPT a detail.
 */
export async function sweptByService(service: ServiceClient, say: (line: string) => void): Promise<(stream: EventStream) => SweptAnswer> {
  const answer = await service.ask("GET", "/admin/config");
  if (!answer.reachable) {
    say(`note: no service answers at ${answer.url} (${answer.why}), so SWEPT is unknown: start it, or set ADMIN_URL to where it runs`);
    return () => ({ swept: null, reason: "no_service" });
  }
  if (answer.status === 401 || answer.status === 403) {
    say(`note: SWEPT is unknown: ${service.refusal(answer).message}`);
    return () => ({ swept: null, reason: "no_token" });
  }
  const plan = publishedSweepPlan(await service.config());
  return (stream) => {
    if (!plan.scope) return { swept: false, reason: "no_sweep" };
    const verdict = sweepVerdict(stream, plan.scope);
    if (!verdict.swept) return verdict;
    return plan.on ? verdict : { swept: false, reason: plan.whyOff };
  };
}

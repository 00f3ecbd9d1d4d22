import type { Config } from "../config.js";
import { sweepScopeOf, sweepVerdict } from "../streams/swept-streams.js";
import type { EventStream } from "../tenant/event-stream.js";

export type SweptAnswer =
  | { swept: true }
  /** `no_sweep`: neither RECONCILE_SWEEP_STREAMS nor PUBLIC_URL; `sweep_off`: RECONCILE_SWEEP_INTERVAL_SECONDS=0. */
  | { swept: false; reason: "not_named" | "points_elsewhere" | "no_sweep" | "sweep_off" };

/** What `streams list` prints after "no" for each reason: the setting behind it. */
export const notSweptBecause: Record<Extract<SweptAnswer, { swept: false }>["reason"], string> = {
  not_named: "not in RECONCILE_SWEEP_STREAMS",
  points_elsewhere: "endpoint not under PUBLIC_URL",
  no_sweep: "set RECONCILE_SWEEP_STREAMS or PUBLIC_URL",
  sweep_off: "RECONCILE_SWEEP_INTERVAL_SECONDS=0",
};

/**
 * Whether the service sweeps a stream, for commands. The one place that decides which
 * settings that is: for now this shell's own (the same keys the service reads), until the
 * running service publishes its configuration for commands to read (CONTRACT.md: commands
 * use the running service's configuration).
 */
export function sweptByService(config: Config): (stream: EventStream) => SweptAnswer {
  const scope = sweepScopeOf(config.env);
  return (stream) => {
    if (!scope) return { swept: false, reason: "no_sweep" };
    const verdict = sweepVerdict(stream, scope);
    if (!verdict.swept) return verdict;
    return config.env.RECONCILE_SWEEP_INTERVAL_SECONDS === 0 ? { swept: false, reason: "sweep_off" } : verdict;
  };
}

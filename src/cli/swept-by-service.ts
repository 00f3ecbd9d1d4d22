import type { Config } from "../config.js";
import { sweepScopeOf, sweepVerdict, type SweepScope } from "../streams/swept-streams.js";
import type { EventStream } from "../tenant/event-stream.js";
import { readServiceConfig } from "./read-service-config.js";

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
 * Whether the running service sweeps a stream, for commands (CONTRACT.md: commands use the
 * running service's configuration): its published sweep scope (issue 18). With no service
 * configuration to read, this shell's own settings, said in one line.
 */
export async function sweptByService(config: Config, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<(stream: EventStream) => SweptAnswer> {
  const service = await readServiceConfig(config);
  let scope: SweepScope | undefined;
  let intervalSeconds: number;
  if (service.config) {
    const { sweep } = service.config;
    scope = sweep.streamIds || sweep.publicUrl ? { streamIds: sweep.streamIds ?? undefined, publicUrl: sweep.publicUrl ?? undefined } : undefined;
    intervalSeconds = sweep.intervalSeconds;
  } else {
    say(`note: ${service.why}; SWEPT follows this shell's RECONCILE_SWEEP_STREAMS, PUBLIC_URL and RECONCILE_SWEEP_INTERVAL_SECONDS`);
    scope = sweepScopeOf(config.env);
    intervalSeconds = config.env.RECONCILE_SWEEP_INTERVAL_SECONDS;
  }
  return (stream) => {
    if (!scope) return { swept: false, reason: "no_sweep" };
    const verdict = sweepVerdict(stream, scope);
    if (!verdict.swept) return verdict;
    return intervalSeconds === 0 ? { swept: false, reason: "sweep_off" } : verdict;
  };
}

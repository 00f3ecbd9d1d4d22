import type { Env } from "../config/config.js";
import type { EventStream } from "../tenant/event-stream.js";

/**
 * Which of the tenant's streams are this service's to sweep and watch (README.md#the-sweep-failed-deliveries-found-without-being-told,
 * "Finding failed deliveries without being told"): those named in RECONCILE_SWEEP_STREAMS,
 * else every stream whose webhook endpoint starts with PUBLIC_URL. A stream pointing
 * elsewhere is never ours, even when named: its events belong to another destination.
 */
export interface SweepScope {
  /** RECONCILE_SWEEP_STREAMS */
  streamIds?: string[];
  /** PUBLIC_URL, without a trailing slash */
  publicUrl?: string;
}

/** The scope from the settings, or undefined when neither setting is there (no sweep, no watch). */
export function sweepScopeOf(env: Pick<Env, "RECONCILE_SWEEP_STREAMS" | "PUBLIC_URL">): SweepScope | undefined {
  if (!env.RECONCILE_SWEEP_STREAMS && !env.PUBLIC_URL) return undefined;
  return { streamIds: env.RECONCILE_SWEEP_STREAMS, publicUrl: env.PUBLIC_URL };
}

/**
 * Why there is no sweep: `no_tenant`, the tenant's API settings are missing; `no_sweep`,
 * neither RECONCILE_SWEEP_STREAMS nor PUBLIC_URL; `sweep_off`, RECONCILE_SWEEP_INTERVAL_SECONDS=0.
 */
export type SweepOff = "no_tenant" | "no_sweep" | "sweep_off";

/** Whether this service sweeps, over which streams, and if not, why. */
export type SweepPlan = { on: true; scope: SweepScope } | { on: false; scope: SweepScope | undefined; whyOff: SweepOff };

/**
 * The one answer to "is the sweep on, and for what" (the sweeper, the published service
 * configuration, the start message and `streams list` all ask it).
 */
export function sweepPlan(env: Pick<Env, "RECONCILE_SWEEP_STREAMS" | "PUBLIC_URL" | "RECONCILE_SWEEP_INTERVAL_SECONDS">, tenantConfigured: boolean): SweepPlan {
  const scope = sweepScopeOf(env);
  if (!tenantConfigured) return { on: false, scope, whyOff: "no_tenant" };
  if (!scope) return { on: false, scope, whyOff: "no_sweep" };
  if (env.RECONCILE_SWEEP_INTERVAL_SECONDS === 0) return { on: false, scope, whyOff: "sweep_off" };
  return { on: true, scope };
}

/** Whether the stream delivers to `publicUrl` itself or below it (not to a host that merely starts the same). */
export function pointsAt(stream: EventStream, publicUrl: string): boolean {
  const endpoint = stream.destination.configuration?.webhook_endpoint;
  if (endpoint === undefined) return false;
  const base = publicUrl.replace(/\/+$/, "");
  return endpoint === base || endpoint.startsWith(`${base}/`);
}

export type SweepVerdict =
  | { swept: true }
  | { swept: false; reason: "not_named" | "points_elsewhere" };

/** Whether this service sweeps `stream`, and if not, why (for `streams list` and the log). */
export function sweepVerdict(stream: EventStream, scope: SweepScope): SweepVerdict {
  if (scope.streamIds && !scope.streamIds.includes(stream.id)) return { swept: false, reason: "not_named" };
  if (scope.publicUrl !== undefined && !pointsAt(stream, scope.publicUrl)) return { swept: false, reason: "points_elsewhere" };
  return { swept: true };
}

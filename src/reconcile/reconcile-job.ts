/**
 * The payload of one reconcile job and its result, the job's return value. Outcome names
 * are README.md#reconcile's (`reconcile` command): `error: <reason>` carries what to change.
 */
export interface ReconcileJobData {
  eventId: string;
  /** The stream to read; unset: DEFAULT_STREAM_ID, else every stream is searched. */
  streamId?: string;
  /** Replay even an event this service already has. */
  force: boolean;
}

export type ReconcileOutcome = "recovered" | "already_received" | "not_failed" | "no_payload" | "not_found" | `error: ${string}`;

export interface ReconcileResult {
  eventId: string;
  /** The stream the delivery record was found in (or the one asked for). */
  streamId?: string;
  outcome: ReconcileOutcome;
  /** `recovered`: the routes the event was queued for. */
  routes?: string[];
  /** `not_failed`: the delivery status the tenant reports (e.g. `pending`). */
  status?: string;
}

/** Outcomes that make `streamkeeper reconcile` exit 1 (README.md#reconcile). */
export function isFailure(outcome: ReconcileOutcome): boolean {
  return outcome === "not_found" || outcome === "no_payload" || outcome.startsWith("error:");
}

/** The `reconcile_total{outcome}` label: the outcome without its reason, so the label set stays bounded. */
export function outcomeLabel(outcome: ReconcileOutcome): string {
  return outcome.startsWith("error:") ? "error" : outcome;
}

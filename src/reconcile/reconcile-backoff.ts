import type { Job } from "bullmq";

/**
 * The backoff type of reconcile jobs. A name of our own: BullMQ's `fixed` and `exponential`
 * bypass the worker's backoffStrategy (docs/libraries.md).
 */
export const reconcileBackoffType = "reconcile";

/** Attempts of a reconcile job: past any outage; the time it is retried for is the bound (reconcileBackoff). */
export const reconcileAttempts = 1_000_000;

export interface ReconcileBackoffOptions {
  /** RECONCILE_RETRY_FOR_SECONDS in ms: how long after it was queued a job is still retried. */
  retryForMs: number;
  /** The first wait; doubles at each attempt. @defaultValue 1000 */
  baseMs?: number;
  /** The longest wait. @defaultValue 60000 */
  maxMs?: number;
}

/**
 * The wait before a reconcile job's next attempt, or -1 (BullMQ's "no more"): 1 s doubling
 * to a minute, with up to a fifth off at random so jobs failed together do not come back
 * together, for as long as RECONCILE_RETRY_FOR_SECONDS after the job was queued. A tenant
 * down for an hour costs a job about 60 calls, not its outcome.
 */
export function reconcileBackoff(options: ReconcileBackoffOptions): (attemptsMade: number, type?: string, error?: Error, job?: Pick<Job, "timestamp">) => number {
  const baseMs = options.baseMs ?? 1000;
  const maxMs = options.maxMs ?? 60_000;
  return (attemptsMade, _type, _error, job) => {
    const wait = Math.min(maxMs, baseMs * 2 ** Math.min(attemptsMade - 1, 30));
    const delay = Math.round(wait * (1 - Math.random() * 0.2));
    // Queued longer ago than the window allows by the next attempt: this failure is the outcome.
    if (job && Date.now() + delay - job.timestamp > options.retryForMs) return -1;
    return delay;
  };
}

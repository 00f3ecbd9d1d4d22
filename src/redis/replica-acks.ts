import { replicaAcksMissing } from "../metrics/registry.js";
import type { RedisClient } from "./redis-connection.js";

/** How long a 202 waits for the replicas at most: within the receiver's 1.5 s store bound. */
export const replicaWaitMs = 1000;

/** Fewer replicas than REDIS_MIN_REPLICAS acknowledged the write in time: answered 503. */
export class ReplicasUnavailableError extends Error {
  constructor(acknowledged: number, wanted: number) {
    super(`only ${acknowledged} of REDIS_MIN_REPLICAS=${wanted} replicas acknowledged the write within ${replicaWaitMs} ms: check the replicas' link to the primary (INFO replication)`);
    this.name = "ReplicasUnavailableError";
  }
}

/**
 * Resolves once `minReplicas` replicas hold every write this connection made so far
 * (Redis WAIT), so an acknowledged event survives a failover to one of them; rejects with
 * ReplicasUnavailableError after `replicaWaitMs`. The ingress stores on this one
 * connection (ledger and BullMQ producers share it), which is what WAIT counts from.
 * WAIT does not make Redis strongly consistent: a replica acknowledges what it received,
 * not what it wrote to disk (docs/reliability.md).
 *
 * WAIT blocks its connection, and every other command on it (other requests' stores,
 * /readyz, gauges) queues behind: one WAIT per request would make N concurrent requests
 * wait N times. So one WAIT is on the connection at a time, shared: a caller whose writes
 * are answered when no WAIT is pending issues one; callers that come while one is pending
 * share the next, issued as soon as it returns. Any WAIT sent after a caller's writes
 * counts them (one connection answers in order), and one sent before might not, which is
 * why they do not join the pending one. Each caller waits for at most two WAITs.
 */
export function createReplicaAcks(redis: RedisClient, minReplicas: number): () => Promise<void> {
  /** The WAIT on the connection now. */
  let pending: Promise<number> | undefined;
  /** The WAIT after it, shared by every caller that came while `pending` was on the connection. */
  let next: Promise<number> | undefined;
  const issue = (): Promise<number> => {
    const wait: Promise<number> = redis.wait(minReplicas, replicaWaitMs).finally(() => {
      if (pending === wait) pending = undefined;
    });
    pending = wait;
    return wait;
  };
  const acknowledged = (): Promise<number> => {
    if (!pending) return issue();
    next ??= pending
      .catch(() => 0)
      .then(() => {
        next = undefined;
        // A WAIT issued since (by a caller that found none pending) was sent after these callers' writes too.
        return pending ?? issue();
      });
    return next;
  };
  return async () => {
    const count = await acknowledged();
    if (count >= minReplicas) return;
    replicaAcksMissing.inc();
    throw new ReplicasUnavailableError(count, minReplicas);
  };
}

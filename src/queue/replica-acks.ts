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
 */
export function createReplicaAcks(redis: RedisClient, minReplicas: number): () => Promise<void> {
  return async () => {
    const acknowledged = await redis.wait(minReplicas, replicaWaitMs);
    if (acknowledged >= minReplicas) return;
    replicaAcksMissing.inc();
    throw new ReplicasUnavailableError(acknowledged, minReplicas);
  };
}

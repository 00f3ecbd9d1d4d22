/**
 * The hash tag of the keys that belong to no route or shard: the reconcile queue, the
 * readiness key, the reconcile pace (`{streamkeeper}`). Each delivery queue, each ledger
 * shard and each entity-version shard has a tag of its own (below), so a Redis Cluster
 * spreads them over its masters while every script still touches one slot (STACK-NOTES.md).
 */
export function bullPrefix(queuePrefix: string): string {
  return `{${queuePrefix}}`;
}

const deliveryQueuePrefix = "deliver-";

/** One delivery queue per route, so a slow or failing route never delays another. */
export function deliveryQueueName(route: string): string {
  return `${deliveryQueuePrefix}${route}`;
}

/**
 * The BullMQ prefix of a route's delivery queue: its own hash tag, so each route's queue
 * (all of BullMQ's keys for it, which its scripts use together) sits in one slot of its own.
 */
export function deliveryQueueBullPrefix(queuePrefix: string, route: string): string {
  return `{${queuePrefix}:${deliveryQueueName(route)}}`;
}

/** The route a delivery queue belongs to; undefined for any other queue (the reconcile queue). */
export function routeOfQueue(queueName: string): string | undefined {
  return queueName.startsWith(deliveryQueuePrefix) ? queueName.slice(deliveryQueuePrefix.length) : undefined;
}

export const reconcileQueueName = "reconcile";

/**
 * One time bucket of one id shard of the ledger (event-ledger.ts). The shard is the hash
 * tag, so the buckets of a shard share a slot and the shards spread over a cluster.
 */
export function ledgerBucketKey(queuePrefix: string, shard: number, bucket: number): string {
  return `{${queuePrefix}:ledger:${shard}}:${bucket}`;
}

/** The ledger's shard count, written once by its first writer (event-ledger.ts). */
export function ledgerShardsKey(queuePrefix: string): string {
  return `${bullPrefix(queuePrefix)}:ledger-shards`;
}

/** A SCAN pattern for every ledger key (buckets and their dictionaries), for tools and benchmarks. */
export function ledgerKeyPattern(queuePrefix: string): string {
  return `{${queuePrefix}:ledger:*`;
}

/** A route's circuit breaker state (dispatch/route-circuit.ts), shared by every worker process. */
export function circuitKey(queuePrefix: string, route: string): string {
  return `${bullPrefix(queuePrefix)}:circuit:${route}`;
}

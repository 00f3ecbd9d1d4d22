/**
 * The hash tag of the few keys that belong to no queue, shard or state of their own: the
 * readiness key, the route circuits, the ledger's shard count, the published service
 * configuration (`{streamkeeper}`); and of every key of the layout before per-route hash tags
 * (upgrade/legacy-queue-layout.ts). Each delivery queue, the reconcile queue, each ledger shard,
 * each entity-version shard, the sweep, the stream watch and the reconcile pace have a tag
 * of their own (below), so a Redis Cluster spreads them over its masters while every script
 * and MULTI still touches one slot (docs/libraries.md#bullmq-and-ioredis-connections).
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

/** The BullMQ prefix of the reconcile queue: a hash tag of its own, like each route's queue. */
export function reconcileQueueBullPrefix(queuePrefix: string): string {
  return `{${queuePrefix}:${reconcileQueueName}}`;
}

/**
 * A key of the sweep's state (sweep/create-sweep-state.ts): lease, checkpoints, findings.
 * One tag for all of it, since its scripts and transactions touch several of these keys.
 */
export function sweepKey(queuePrefix: string, name: string): string {
  return `{${queuePrefix}:sweep}:${name}`;
}

/** A key of the stream watch's state (streams/stream-health-store.ts): its claim and findings. */
export function streamWatchKey(queuePrefix: string, name: string): string {
  return `{${queuePrefix}:stream-watch}:${name}`;
}

/** The tenant call pace every process shares (pace/create-call-pacer.ts): one key, its own tag. */
export function reconcilePaceKey(queuePrefix: string): string {
  return `{${queuePrefix}:reconcile-pace}`;
}

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

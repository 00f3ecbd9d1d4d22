/**
 * Every Redis key of Streamkeeper starts with the QUEUE_PREFIX as a hash tag
 * (`{streamkeeper}`), so on Redis Cluster all of them share one slot: BullMQ's Lua
 * scripts and the ledger's own script then never cross slots (STACK-NOTES.md).
 */
export function bullPrefix(queuePrefix: string): string {
  return `{${queuePrefix}}`;
}

/** One delivery queue per route, so a slow or failing route never delays another. */
export function deliveryQueueName(route: string): string {
  return `deliver-${route}`;
}

export const reconcileQueueName = "reconcile";

export function ledgerKey(queuePrefix: string, eventId: string): string {
  return `${bullPrefix(queuePrefix)}:event:${eventId}`;
}

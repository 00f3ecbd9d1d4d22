import type { Cluster, Redis } from "ioredis";
import { bullPrefix } from "./queue-names.js";

/** `{<QUEUE_PREFIX>}:service-config`: the running service's configuration as a JSON document (service-config.ts). */
export function serviceConfigKey(queuePrefix: string): string {
  return `${bullPrefix(queuePrefix)}:service-config`;
}

/** Written at every start: the last service started on this prefix is the one commands follow. */
export async function writeServiceConfig(redis: Redis | Cluster, queuePrefix: string, document: unknown): Promise<void> {
  await redis.set(serviceConfigKey(queuePrefix), JSON.stringify(document));
}

export async function readServiceConfigDocument(redis: Redis | Cluster, queuePrefix: string): Promise<unknown> {
  const text = await redis.get(serviceConfigKey(queuePrefix));
  return text === null ? undefined : (JSON.parse(text) as unknown);
}

import type { RedisClient } from "../redis/redis-connection.js";
import type { ArchiveRecord } from "./archive-record.js";

/**
 * The Redis Stream the archive's records wait in until the archive writer has them in
 * Postgres: a hash tag of its own, so on a Redis Cluster it sits in one slot and every
 * command on it is single-key (docs/deploy.md).
 */
export function archiveOutboxKey(queuePrefix: string): string {
  return `{${queuePrefix}:archive}:outbox`;
}

/** The consumer group of every archive writer (each process is one consumer). */
export const archiveWriterGroup = "archive-writer";

/** Adds records to the outbox; resolves once Redis has them. */
export type ArchiveOutbox = (records: ArchiveRecord[]) => Promise<void>;

/**
 * XADD per record, on the connection the caller already uses for the same work (the
 * store's, the dispatcher's ledger connection): ioredis pipelines commands sent in the
 * same tick on one socket, so an event's outbox entry travels with its queue writes.
 */
export function createArchiveOutbox(redis: RedisClient, queuePrefix: string): ArchiveOutbox {
  const key = archiveOutboxKey(queuePrefix);
  return async (records) => {
    await Promise.all(records.map((record) => redis.xadd(key, "*", "r", JSON.stringify(record))));
  };
}

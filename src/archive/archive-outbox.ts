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

/** What `archivedThrough` allows for a record on its way to the outbox: its time is the app's clock, its entry id Redis's. */
export const outboxArrivalMarginMs = 5000;

/**
 * Until when Postgres holds every record: the time of the oldest entry still in the outbox
 * (or now, when it is empty), less `outboxArrivalMarginMs`. Records reach Postgres out of
 * order (a backlog after an outage, a crashed writer's batch taken over later), so a
 * reader by time (a replay) must not pass this.
 */
export async function archivedThrough(redis: RedisClient, queuePrefix: string, now = Date.now()): Promise<number> {
  const first = (await redis.xrange(archiveOutboxKey(queuePrefix), "-", "+", "COUNT", 1))[0];
  const oldest = first ? Number(first[0].split("-")[0]) : now;
  return Math.min(oldest, now) - outboxArrivalMarginMs;
}

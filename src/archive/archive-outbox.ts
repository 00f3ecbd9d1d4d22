import { createCallBatcher } from "../queue/call-batcher.js";
import type { RedisClient } from "../redis/redis-connection.js";
import { outboxAttemptsFields, outboxFields, type ArchiveRecord } from "./archive-record.js";

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
 * XADD per event record (its fields: `outboxFields`), and one for the attempt records of a
 * call together (`outboxAttemptsFields`), on the connection the caller already uses for the
 * same work (the store's, the dispatcher's records connection), the records of one call in
 * one write.
 * With `gatherMs`, the records of that many milliseconds from the first go together in one
 * write and their attempts in one entry (a delivery's attempt records: one a job, each a
 * write and a system call of its own was most of what the archive cost a worker,
 * docs/benchmarks.md); `flush()` sends what waits and resolves once Redis has every record sent.
 */
export function createArchiveOutbox(redis: RedisClient, queuePrefix: string, { gatherMs = 0 } = {}): ArchiveOutbox & { flush(): Promise<void> } {
  const key = archiveOutboxKey(queuePrefix);
  const send = async (records: ArchiveRecord[]): Promise<Array<undefined | Error>> => {
    const events = records.filter((record) => record.kind === "event");
    const attempts = records.filter((record) => record.kind === "attempt");
    const pipeline = redis.pipeline();
    for (const record of events) pipeline.xadd(key, "*", ...outboxFields(record));
    if (attempts.length > 0) pipeline.xadd(key, "*", ...outboxAttemptsFields(attempts));
    const replies = (await pipeline.exec()) ?? [];
    // An event's reply is its entry's, in order; an attempt's, the shared entry's (the last).
    let event = 0;
    return records.map((record) => {
      const reply = replies[record.kind === "event" ? event++ : events.length];
      return reply ? (reply[0] ?? undefined) : new Error("Redis gave no reply to this record's XADD");
    });
  };
  const batched = createCallBatcher<ArchiveRecord, undefined>(send, { gatherMs, maxBatch: 256 });
  const add: ArchiveOutbox = async (records) => {
    await (gatherMs > 0 ? Promise.all(records.map(batched)) : send(records).then(firstError));
  };
  return Object.assign(add, { flush: () => batched.flush() });
}

function firstError(replies: Array<undefined | Error>) {
  const error = replies.find((reply) => reply !== undefined);
  if (error) throw error;
}

/** The oldest record still in the outbox (not yet in Postgres): its entry id's time (Redis's clock) and, for an event's record, its receivedAt (the service's), or undefined when none waits. */
export async function oldestInOutbox(redis: RedisClient, queuePrefix: string): Promise<{ addedAt: number; receivedAt?: number } | undefined> {
  const first = (await redis.xrange(archiveOutboxKey(queuePrefix), "-", "+", "COUNT", 1))[0];
  if (!first) return undefined;
  const [id, fields] = first;
  let receivedAt: unknown;
  try {
    // An event's own arrival; an attempt's receivedAt is its event's (the partition it goes
    // to), long past for a retry or a replay's delivery, and says nothing of what events may
    // still come: held, it kept replays waiting behind their own attempts' records.
    // An entry of attempts (`a`) is never read: its receivedAt would say nothing either.
    const record = fields[0] === "r" ? (JSON.parse(fields[1] ?? "") as { kind?: unknown; receivedAt?: unknown }) : undefined;
    if (record?.kind === "event") receivedAt = record.receivedAt;
  } catch {
    // Not a record (the writer sets it aside as poison): its entry id's time alone.
  }
  return { addedAt: Number(id.split("-")[0]), ...(typeof receivedAt === "number" ? { receivedAt } : {}) };
}

/** What `archivedThrough` allows for a record on its way to the outbox, and for clocks a little apart. */
export const outboxArrivalMarginMs = 5000;

/**
 * Until when Postgres holds every record: the oldest record still in the outbox (by the
 * earlier of its entry id's time and its receivedAt: Redis's clock and the service's), or
 * now when none waits, less `outboxArrivalMarginMs`. Records reach Postgres out of order
 * (a backlog after an outage, a crashed writer's batch taken over later), so a reader by
 * time (a replay) must not pass this.
 */
export async function archivedThrough(redis: RedisClient, queuePrefix: string, now = Date.now()): Promise<number> {
  const oldest = await oldestInOutbox(redis, queuePrefix);
  return Math.min(oldest?.addedAt ?? now, oldest?.receivedAt ?? now, now) - outboxArrivalMarginMs;
}

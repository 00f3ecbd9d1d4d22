import { hostname } from "node:os";
import type pg from "pg";
import type { Logger } from "../logging/logger.js";
import { archiveWriterRefused, archiveWrites } from "../metrics/archive-metrics.js";
import type { RedisClient } from "../redis/redis-connection.js";
import { maintainPartitions, oldestKept } from "./archive-partitions.js";
import { archiveOutboxKey, archiveWriterGroup } from "./archive-outbox.js";
import { parseOutboxEntry } from "./archive-record.js";
import { createEntryTally } from "./entry-tally.js";
import { createKeptBack, type ReadRecord } from "./kept-back.js";
import { migrateArchive } from "./migrate-archive.js";
import { archiveIdentity, createOutboxDatabaseClaim, defaultClaimTiming, type ClaimTiming, type OutboxDatabaseClaim } from "./outbox-database-claim.js";
import { writeArchiveBatch } from "./write-archive-batch.js";

export interface ArchiveWriterDeps {
  /** A connection of its own that may block (a `worker` one): the writer waits on the outbox with XREADGROUP BLOCK. */
  redis: RedisClient;
  pool: pg.Pool;
  queuePrefix: string;
  logger: Logger;
  /** ARCHIVE_RETENTION_DAYS */
  retentionDays: number;
  /** The clock of retention (a test moves it). @defaultValue Date.now */
  now?: () => number;
  /** Records per transaction. @defaultValue 500 */
  batchSize?: number;
  /**
   * False: this process takes no record from the outbox (a receiver: the writers of the
   * worker processes do); it keeps the schema, the outbox's claim and `available()`, asking
   * Postgres every `claimTiming.everyMs`. @defaultValue true
   */
  drains?: boolean;
  /** After a batch smaller than `batchSize`, the wait before reading the next. @defaultValue 200 */
  gatherMs?: number;
  /**
   * How long an event read waits for its deliveries' records before it is written
   * (kept-back.ts): a route's first delivery then goes into the event's row. @defaultValue 1000
   */
  holdMs?: number;
  /** The wait before trying Postgres again after it failed. @defaultValue 2000 */
  retryMs?: number;
  /** This process's name in the consumer group. @defaultValue host:pid */
  consumer?: string;
  /** The database as logs name it (no password): told to a writer of another database. @defaultValue "a database" */
  database?: string;
  /** How long a claim of the outbox lasts and how often it is renewed (outbox-database-claim.ts; a test shortens them). */
  claimTiming?: ClaimTiming;
}

export interface ArchiveWriter {
  /** True once Postgres answered and the schema is current; false while it is unreachable. */
  available(): boolean;
  /**
   * While this writer's database is not the one the outbox is archived to: that database's
   * description (the admin API then refuses search, replay and erasure, which would see a part).
   */
  refusedBy(): string | undefined;
  /** Stops after the batch in hand (its records stay pending and are archived by the next writer). */
  close(): Promise<void>;
}

/** An outbox entry as XREADGROUP gives it; `null` fields: an id this consumer held that was removed from the stream since. */
type Entry = [id: string, fields: string[] | null];

/** Pending records of a consumer that stopped (a crash) are taken over after this long. */
const claimIdleMs = 30_000;
const maintainEveryMs = 3_600_000;

/**
 * Drains the archive's Redis outbox into Postgres (docs/architecture.md, "The archive"):
 * one consumer per process in one group, batches in one transaction each, XACK and XDEL
 * only after the commit, so a crash or a Postgres outage loses nothing: the batch stays
 * pending and is written again (nothing is archived twice, write-archive-batch.ts).
 * What it does with a record it can never handle, in one place: a record that is not
 * one (unreadable) or that Postgres refuses on its own (its data) is poison: counted
 * (`archive_writes_total{result="poison"}`), logged with its outbox id, and removed; a
 * record older than the retention is counted `expired` and removed. The writer moves on.
 */
export function createArchiveWriter(deps: ArchiveWriterDeps): ArchiveWriter {
  const { redis, pool, logger, retentionDays } = deps;
  const key = archiveOutboxKey(deps.queuePrefix);
  const now = deps.now ?? Date.now;
  const batchSize = deps.batchSize ?? 500;
  const retryMs = deps.retryMs ?? 2000;
  const gatherMs = deps.gatherMs ?? 200;
  const holdMs = deps.holdMs ?? 1000;
  const consumer = deps.consumer ?? `${hostname()}:${process.pid}`;
  let closing = false;
  let ready = false;
  let unavailableSaid = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) => new Promise<void>((ok) => {
    const timer = setTimeout(ok, ms);
    wake = () => (clearTimeout(timer), ok());
  });

  // Which archive the database is, read at every (re)connection: a database recreated under
  // the same URL is another archive.
  let identity: string | undefined;
  const prepare = async () => {
    const applied = await migrateArchive(pool);
    if (applied.length > 0) logger.info({ migrations: applied }, "archive schema migrated");
    identity = await archiveIdentity(pool);
    await maintain();
    await redis.xgroup("CREATE", key, archiveWriterGroup, "0", "MKSTREAM").catch((error: Error) => {
      if (!/BUSYGROUP/.test(error.message)) throw error;
    });
  };
  let maintainedAt = 0;
  const maintain = async () => {
    const dropped = await maintainPartitions(pool, now(), retentionDays);
    maintainedAt = now();
    if (dropped.length > 0) logger.info({ partitions: dropped, retentionDays }, "archive: dropped the days older than ARCHIVE_RETENTION_DAYS");
  };

  const { next, readsPending, readPendingAgain, done } = outboxConsumer(redis, key, consumer, batchSize);
  // Events kept back for their deliveries' records, still pending in the outbox (kept-back.ts).
  // Never while this consumer reads its pending records again: those would come back with them.
  const held = createKeptBack(holdMs, batchSize * 4);
  const tally = createEntryTally();
  // What it kept back is read again with the rest of its pending records.
  const readAgain = () => {
    held.clear();
    tally.clear();
    readPendingAgain();
  };
  const claimTiming = deps.claimTiming ?? defaultClaimTiming;
  const outboxClaim = claimSaying(createOutboxDatabaseClaim(redis, key, `${deps.database ?? "a database"} (${consumer})`, claimTiming), deps.database, logger);
  const holdsOutbox = () => outboxClaim.check(identity!);
  // Its identity read again on each renewal (a database recreated under the same URL is
  // another archive), the last one kept while Postgres does not answer.
  const renewal = renewOnTimer(outboxClaim.check, async () => (identity = (await archiveIdentity(pool).catch(() => identity)) ?? identity), claimTiming.everyMs, logger);

  /** Sets aside what can never be archived, keeps back events awaiting their deliveries, writes the rest; true when it wrote. */
  const handle = async (entries: Entry[], mayHold: boolean) => {
    const { records, setAside } = readEntries(entries, now(), retentionDays, logger);
    tally.read(records);
    // The hold's clock is the machine's (a test moves `now`, the retention's).
    const write = mayHold ? held.take(records, performance.now()) : records;
    await writeOrSplit(pool, write, logger);
    await done([...setAside, ...tally.written(write)]);
    return write.length > 0;
  };

  // Said once the archive works again, whatever stopped it: Postgres gone, or an error it
  // answered a batch with that was not about the batch's data.
  const recovered = () => {
    if (!unavailableSaid) return;
    logger.info("archive available again: writing what waited in the outbox");
    unavailableSaid = false;
  };

  const loop = (async () => {
    while (!closing) {
      try {
        if (!ready) {
          await prepare();
          ready = true;
          recovered();
        }
        if (now() - maintainedAt >= maintainEveryMs) await maintain();
        if (!(await holdsOutbox())) {
          // What it kept back goes to the outbox's writers (XAUTOCLAIM); read again if the claim comes back.
          readAgain();
          await pause(claimTiming.everyMs);
          continue;
        }
        if (deps.drains === false) {
          // Postgres asked now and then, so a database gone is seen (archive_up) without a batch to fail.
          await pool.query("SELECT 1");
          recovered();
          await pause(claimTiming.everyMs);
          continue;
        }
        const mayHold = !readsPending();
        const entries = await next();
        if (entries.length > 0 || held.size > 0) {
          // Said only once Postgres took a batch: everything read may be kept back.
          if (await handle(entries, mayHold)) recovered();
          // A part batch: the next read waits for more, so a steady flow is written in a few
          // large transactions rather than many small ones (each a durable commit and seven
          // round trips; docs/benchmarks.md, "The archive's cost").
          if (entries.length < batchSize) await pause(gatherMs);
        }
      } catch (error) {
        if (closing) break;
        archiveWrites.inc({ result: "error" });
        readAgain();
        if (isUnreachable(error)) ready = false;
        if (!unavailableSaid) {
          logger.error({ err: error }, "archive unavailable: events are kept in the Redis outbox and archived when Postgres answers again (archive_lag_seconds grows meanwhile); retrying");
          unavailableSaid = true;
        }
        await pause(retryMs);
      }
    }
  })();

  return {
    available: () => ready && !unavailableSaid,
    refusedBy: outboxClaim.holder,
    async close() {
      closing = true;
      wake?.();
      await loop;
      await renewal.stop();
      archiveWriterRefused.set(0);
    },
  };
}

/**
 * The outbox's claim renewed every `everyMs` whatever the writer's loop does (a Postgres
 * outage, a long batch): the database is still the archive, and another must not take the
 * outbox meanwhile. One renewal at a time; a failing one said once.
 */
function renewOnTimer(check: (databaseId: string) => Promise<boolean>, identity: () => Promise<string | undefined>, everyMs: number, logger: Logger) {
  let renewing: Promise<void> | undefined;
  let failed = false;
  const renew = async () => {
    const databaseId = await identity();
    if (databaseId === undefined) return;
    try {
      await check(databaseId);
      failed = false;
    } catch (error) {
      if (!failed) logger.warn({ err: error }, "archive: could not renew this database's claim of the outbox in Redis; retrying (past 60 s another database may take it)");
      failed = true;
    }
  };
  const timer = setInterval(() => {
    renewing ??= renew().finally(() => (renewing = undefined));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await renewing;
    },
  };
}

/** `check`: true while this writer's database is the outbox's; else false, said once per refusal and shown by its gauge. */
function claimSaying(claim: OutboxDatabaseClaim, database: string | undefined, logger: Logger) {
  let holder: string | undefined;
  // The loop and the renewal timer ask alike: one question at a time, so a refusal is said once.
  let asking: Promise<boolean> | undefined;
  const ask = async (databaseId: string) => {
    const answer = await claim(databaseId);
    archiveWriterRefused.set(answer.held ? 0 : 1);
    if (answer.held && holder !== undefined) logger.info("archive: this writer's database now takes the outbox's records");
    if (!answer.held && holder === undefined) {
      logger.error(
        { database, holder: answer.holder },
        "archive: this process's archive database is not the one the other processes of this Redis archive to (holder); it takes no record, and its search, replay and erasure are refused (the archive would be split). Give every process the same ARCHIVE_DATABASE_URL (docs/deploy.md, The archive: one database)",
      );
    }
    holder = answer.held ? undefined : answer.holder;
    return answer.held;
  };
  return {
    holder: () => holder,
    check: (databaseId: string) => (asking ??= ask(databaseId).finally(() => (asking = undefined))),
  };
}

/**
 * This process's reads of the outbox as one consumer of the writers' group, and the removal
 * of what is archived. `next()`: its own pending records first (a batch Postgres refused,
 * or held when its process stopped), then new ones; with none, now and then those a stopped
 * writer left. `readPendingAgain()` after a failed batch.
 */
function outboxConsumer(redis: ArchiveWriterDeps["redis"], key: string, consumer: string, batchSize: number) {
  let pendingFirst = true;
  let claimedAt = 0;
  const read = async (from: "0" | ">"): Promise<Entry[]> => {
    const reply = (await redis.call("XREADGROUP", "GROUP", archiveWriterGroup, consumer, "COUNT", batchSize, ...(from === ">" ? ["BLOCK", 1000] : []), "STREAMS", key, from)) as unknown;
    return entriesOf(reply, key);
  };
  const claimStalled = async (): Promise<Entry[]> => {
    const reply = (await redis.call("XAUTOCLAIM", key, archiveWriterGroup, consumer, claimIdleMs, "0-0", "COUNT", batchSize)) as unknown[];
    return ((reply?.[1] ?? []) as Entry[]).filter((entry) => Array.isArray(entry));
  };
  return {
    async next(): Promise<Entry[]> {
      const entries = await read(pendingFirst ? "0" : ">");
      if (pendingFirst && entries.length === 0) pendingFirst = false;
      if (entries.length > 0 || Date.now() - claimedAt < claimIdleMs / 2) return entries;
      claimedAt = Date.now();
      return claimStalled();
    },
    readsPending: () => pendingFirst,
    readPendingAgain: () => void (pendingFirst = true),
    async done(ids: string[]) {
      if (ids.length === 0) return;
      // Removed, then acknowledged: stopped in between, an entry stays pending without its
      // fields (acknowledged at the next read), never in the stream unread by anyone, where it
      // would hold archivedThrough (and every replay waiting on it) back for good.
      await redis.xdel(key, ...ids);
      await redis.xack(key, archiveWriterGroup, ...ids);
    },
  };
}

/**
 * The records of outbox entries, and the ids of those set aside: gone from the stream, not a
 * record (poison, counted and logged), or older than the retention (expired). An entry of
 * several attempts gives each that can be archived; it is set aside when none can.
 */
function readEntries(entries: Entry[], now: number, retentionDays: number, logger: Logger): { records: ReadRecord[]; setAside: string[] } {
  const records: ReadRecord[] = [];
  const setAside: string[] = [];
  const readAt = performance.now();
  for (const [id, fields] of entries) {
    if (fields === null) {
      // Gone from the stream while held: nothing to archive, but still this consumer's to
      // acknowledge, or it stays in the group's pending list for good.
      setAside.push(id);
      continue;
    }
    const before = records.length;
    for (const parsed of parseOutboxEntry(fields)) {
      if ("poison" in parsed) {
        archiveWrites.inc({ result: "poison" });
        logger.error({ outboxId: id, why: parsed.poison }, "archive: an outbox record cannot be read; set aside (removed from the outbox), the writer goes on");
      } else if (parsed.receivedAt < oldestKept(now, retentionDays)) {
        archiveWrites.inc({ result: "expired" });
        logger.warn({ outboxId: id, eventId: parsed.kind === "event" ? parsed.id : parsed.eventId }, "archive: a record older than ARCHIVE_RETENTION_DAYS reached the writer; not archived");
      } else {
        records.push({ id, record: parsed, readAt });
      }
    }
    if (records.length === before) setAside.push(id);
  }
  return { records, setAside };
}

/** The batch at once; when Postgres refuses it for its data, each record alone, the refused ones set aside. */
async function writeOrSplit(pool: ArchiveWriterDeps["pool"], records: ReadRecord[], logger: ArchiveWriterDeps["logger"]) {
  if (records.length === 0) return;
  try {
    count(await writeArchiveBatch(pool, records.map((entry) => entry.record)));
  } catch (error) {
    if (!refusedForItsData(error)) throw error;
    for (const entry of records) {
      try {
        count(await writeArchiveBatch(pool, [entry.record]));
      } catch (single) {
        if (!refusedForItsData(single)) throw single;
        archiveWrites.inc({ result: "poison" });
        logger.error({ outboxId: entry.id, err: single }, "archive: Postgres refused an outbox record; set aside (removed from the outbox), the writer goes on");
      }
    }
  }
}

function count(result: { written: number; duplicate: number }) {
  if (result.written > 0) archiveWrites.inc({ result: "written" }, result.written);
  if (result.duplicate > 0) archiveWrites.inc({ result: "duplicate" }, result.duplicate);
}

/** Postgres refused the data itself (a bad value, a constraint): writing it again would fail again. */
function refusedForItsData(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^(22|23)/.test(code);
}

/** No connection, or the server went away: the schema must be checked again when it is back. */
function isUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code !== "string" || /^(08|57P|53|3D)/.test(code) || /^E[A-Z]+$/.test(code);
}

/**
 * XREADGROUP's reply, RESP2 (`[[key, entries]]`), RESP3 (a map, which ioredis flattens to
 * `[key, entries]`, or gives as an object with `replyMapping`), as the entries of `key`.
 */
function entriesOf(reply: unknown, key: string): Entry[] {
  if (reply === null || reply === undefined) return [];
  let entries: Entry[] | undefined;
  if (Array.isArray(reply) && typeof reply[0] === "string") entries = reply[1] as Entry[] | undefined;
  else if (Array.isArray(reply)) entries = (reply as Array<[string, Entry[]]>).find((item) => Array.isArray(item) && String(item[0]) === key)?.[1];
  else entries = (reply as Record<string, Entry[]>)[key];
  return (entries ?? []).filter((entry) => Array.isArray(entry));
}

import pg from "pg";
import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { archiveLag, archiveNotStarted, archiveUp, registerArchiveUp } from "../metrics/archive-metrics.js";
import { onScrape } from "../metrics/registry.js";
import { closeRedis, createRedis, type RedisClient } from "../redis/redis-connection.js";
import { redactUrlCredentials } from "../logging/redact-secrets.js";
import { oldestInOutbox } from "./archive-outbox.js";
import { createArchiveWriter, type ArchiveWriter } from "./create-archive-writer.js";
import { resolveArchiveDatabase } from "./resolve-archive-database.js";
import { createArchivePool } from "./create-archive-pool.js";

export interface RunningArchive {
  pool: pg.Pool;
  writer: ArchiveWriter;
  retentionDays: number;
  close(): Promise<void>;
}

/**
 * The archive of this process, or undefined when ARCHIVE=off (said once here). Never
 * fails the start for Postgres: an unreachable database is said by the writer, which
 * keeps trying while events wait in the Redis outbox (docs/operating.md, The archive).
 * `drains`: this process writes the outbox into Postgres (a role with a worker); a
 * receiver's writer only keeps the schema, the claim and `archive_up`, so the archive's
 * work never shares a thread with the acknowledgements (docs/architecture.md, "The archive").
 */
export async function startArchive(deps: { config: Config; logger: Logger; redisUrl: string; client: RedisClient; who: string; drains: boolean; now?: () => number }): Promise<RunningArchive | undefined> {
  const { env } = deps.config;
  const { logger } = deps;
  if (env.ARCHIVE === "off") {
    logger.info("archive off (ARCHIVE=off): events are not kept for search, replay or erasure");
    return undefined;
  }
  registerArchiveUp();
  const database = await resolveArchiveDatabase(deps.config, logger, deps.who, deps.redisUrl).catch((error: unknown) => {
    // The embedded Postgres could not start: the service runs on without the archive, and says
    // so (an outbox with no writer would grow Redis for good).
    // One line that says it all, the reason and what to do, at error on the terminal.
    logger.error({ err: error }, `the service runs WITHOUT its archive (no search, replay or erasure of the events it stores now): the embedded Postgres could not be started: ${(error as Error).message}`);
    return undefined;
  });
  archiveNotStarted.set(database ? 0 : 1);
  archiveUp.set(0);
  if (!database) return undefined;
  const pool = createArchivePool(database.url, env.ARCHIVE_STATEMENT_TIMEOUT_MS, `streamkeeper-${deps.who}`);
  // An idle client whose server went away: the next query reconnects.
  pool.on("error", (error) => logger.debug({ err: error }, "archive: idle Postgres connection lost"));
  const writerConnection = createRedis(deps.redisUrl, "worker", "streamkeeper-archive");
  writerConnection.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
  const writer = createArchiveWriter({ redis: writerConnection, pool, queuePrefix: env.QUEUE_PREFIX, logger, retentionDays: env.ARCHIVE_RETENTION_DAYS, now: deps.now, database: redactUrlCredentials(database.url), drains: deps.drains });
  logger.info({ database: redactUrlCredentials(database.url), retentionDays: env.ARCHIVE_RETENTION_DAYS }, "archive on: every stored event and its outcomes are kept in PostgreSQL");
  const unregister = onScrape(async () => {
    archiveUp.set(writer.available() ? 1 : 0);
    try {
      const oldest = await oldestInOutbox(deps.client, env.QUEUE_PREFIX);
      archiveLag.set(oldest ? Math.max(0, (Date.now() - oldest.addedAt) / 1000) : 0);
    } catch {
      // Redis away: its own gauges say so.
    }
    return true;
  });
  return {
    pool,
    writer,
    retentionDays: env.ARCHIVE_RETENTION_DAYS,
    async close() {
      unregister();
      await writer.close();
      await closeRedis(writerConnection);
      await pool.end().catch(() => {});
      await database.release();
    },
  };
}

import pg from "pg";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { archiveLag, archiveNotStarted } from "../metrics/archive-metrics.js";
import { onScrape } from "../metrics/registry.js";
import { closeRedis, createRedis, type RedisClient } from "../redis/redis-connection.js";
import { redactUrlCredentials } from "../redact-secrets.js";
import { oldestInOutbox } from "./archive-outbox.js";
import { createArchiveWriter, type ArchiveWriter } from "./create-archive-writer.js";
import { resolveArchiveDatabase } from "./resolve-archive-database.js";

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
 */
export async function startArchive(deps: { config: Config; logger: Logger; redisUrl: string; client: RedisClient; who: string; now?: () => number }): Promise<RunningArchive | undefined> {
  const { env } = deps.config;
  const { logger } = deps;
  if (env.ARCHIVE === "off") {
    logger.info("archive off (ARCHIVE=off): events are not kept for search, replay or erasure");
    return undefined;
  }
  const database = await resolveArchiveDatabase(deps.config, logger, deps.who, deps.redisUrl).catch((error: unknown) => {
    // The embedded Postgres could not start: the service runs on without the archive, and says
    // so (an outbox with no writer would grow Redis for good).
    logger.error({ err: error }, "archive unavailable: the embedded Postgres could not be started; the service runs without the archive (set ARCHIVE_DATABASE_URL, or ARCHIVE=off to silence this)");
    return undefined;
  });
  archiveNotStarted.set(database ? 0 : 1);
  if (!database) return undefined;
  const pool = new pg.Pool({ connectionString: database.url, max: 5, connectionTimeoutMillis: 5000, idleTimeoutMillis: 10_000, application_name: `streamkeeper-${deps.who}` });
  // An idle client whose server went away: the next query reconnects.
  pool.on("error", (error) => logger.debug({ err: error }, "archive: idle Postgres connection lost"));
  const writerConnection = createRedis(deps.redisUrl, "worker", "streamkeeper-archive");
  writerConnection.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
  const writer = createArchiveWriter({ redis: writerConnection, pool, queuePrefix: env.QUEUE_PREFIX, logger, retentionDays: env.ARCHIVE_RETENTION_DAYS, now: deps.now, database: redactUrlCredentials(database.url) });
  logger.info({ database: redactUrlCredentials(database.url), retentionDays: env.ARCHIVE_RETENTION_DAYS }, "archive on: every stored event and its outcomes are kept in PostgreSQL");
  const unregister = onScrape(async () => {
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

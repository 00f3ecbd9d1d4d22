import { Counter, Gauge } from "prom-client";
import { registry } from "./registry.js";

/** Records the archive writer handled, by result (README.md#the-archive-search-timelines-replay-erasure). */
export const archiveWrites = new Counter({
  name: "streamkeeper_archive_writes_total",
  help: "Archive records handled by the archive writer: written (events and attempts committed to Postgres), duplicate (archived before), poison (unreadable, set aside), expired (older than ARCHIVE_RETENTION_DAYS), error (a batch Postgres refused; retried)",
  labelNames: ["result"] as const,
  registers: [registry],
});

/** Set by the archive's own collect (start-archive.ts): the age of the oldest record not yet in Postgres. */
export const archiveLag = new Gauge({
  name: "streamkeeper_archive_lag_seconds",
  help: "Age of the oldest record waiting in the Redis outbox to be archived in Postgres; 0 when it is empty",
  registers: [registry],
});

/**
 * Set at each scrape (start-archive.ts): 1 while this process's archive writer can write
 * Postgres. Registered by a process whose archive is on (registerArchiveUp), so that
 * ARCHIVE=off exports no 0 for an alert to take as an outage.
 */
export const archiveUp = new Gauge({
  name: "streamkeeper_archive_up",
  help: "1 while this process can write its archive (Postgres answers and the schema is current); 0 while it cannot (Postgres down, hung past ARCHIVE_STATEMENT_TIMEOUT_MS, or never started): events wait in the Redis outbox meanwhile. Absent with ARCHIVE=off",
  registers: [],
});

export function registerArchiveUp(): void {
  if (!registry.getSingleMetric("streamkeeper_archive_up")) registry.registerMetric(archiveUp);
}

/** Embedded Postgres servers this process restarted after they died (keep-embedded-postgres.ts). */
export const embeddedPostgresRestarts = new Counter({
  name: "streamkeeper_embedded_postgres_restarts_total",
  help: "Times this process restarted the embedded Postgres of the archive after it died (kill -9, the OOM killer); it recovers from its write-ahead log",
  registers: [registry],
});

/** 1 when ARCHIVE=on but this process runs without the archive: its embedded Postgres could not start (start-archive.ts). */
export const archiveNotStarted = new Gauge({
  name: "streamkeeper_archive_not_started",
  help: "1 when ARCHIVE is on but this process runs without the archive because its embedded Postgres could not start: the events it stores are not archived; 0 otherwise",
  registers: [registry],
});

/** 1 while this process's archive writer takes no record: its database is not the one the outbox is archived to (outbox-database-claim.ts). */
export const archiveWriterRefused = new Gauge({
  name: "streamkeeper_archive_writer_refused",
  help: "1 while this process's archive writer takes no record because its ARCHIVE_DATABASE_URL (or embedded Postgres) is another database than the one the outbox is archived to; 0 otherwise",
  registers: [registry],
});

export const replayDeliveries = new Counter({
  name: "streamkeeper_replay_deliveries_total",
  help: "Deliveries of replays, by route and outcome (delivered, dead_letter, stale, retry, skipped_erased)",
  labelNames: ["route", "outcome"] as const,
  registers: [registry],
});

export const replaysRunning = new Gauge({
  name: "streamkeeper_replays_running",
  help: "Replays this process is sending now (one waiting for the archive to catch up is not counted while it waits; its state stays running)",
  registers: [registry],
});

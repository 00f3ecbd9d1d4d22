import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logging/logger.js";
import { embeddedPostgresRestarts } from "../metrics/archive-metrics.js";
import { keepEmbeddedServer, type EmbeddedServerKeeper } from "../redis/keep-embedded-server.js";
import { isAlive } from "../process/is-alive.js";
import { startPostgresServer } from "./postgres-server.js";
import { runnableBinDir } from "./postgres-binaries.js";

export interface KeepEmbeddedPostgresOptions {
  /** DATA_DIR/postgres: the socket, the log and the lock. */
  dir: string;
  /** Its data folder (DATA_DIR/postgres/data). */
  dataDir: string;
  logger: Logger;
  /** @defaultValue 1000 */
  checkEveryMs?: number;
  /** Whether it answers now (resolve-archive-database.ts asks its socket). */
  answers(): Promise<boolean>;
}

/** Arguments every embedded Postgres is started with (resolve-archive-database.ts, and a restart here). */
export function embeddedPostgresOptions(dir: string, dataDir: string, binDir: string) {
  return { binDir, dataDir, socketDir: dir, logFile: join(dir, "postgres.log"), detached: true };
}

/**
 * Brings the embedded Postgres back when it dies (keep-embedded-server.ts): asked every
 * second, restarted within a few by the process that takes the lock, from its
 * write-ahead log (crash recovery: every commit the writer made durable is there),
 * counted (`embedded_postgres_restarts_total`). Backends orphaned by a killed postmaster
 * hold its shared memory a moment: Postgres refuses to start beside them, and the next
 * check tries again. Meanwhile the writer keeps events in the Redis outbox.
 */
export function keepEmbeddedPostgres(options: KeepEmbeddedPostgresOptions): EmbeddedServerKeeper {
  const { dir, dataDir, logger } = options;
  return keepEmbeddedServer({
    name: "the embedded Postgres of the archive",
    dir,
    answers: options.answers,
    runningPid: () => postmasterPid(dataDir),
    // The binaries found (and their library links checked) when a restart needs them, not at every start.
    restart: async () => ({ pid: (await startPostgresServer(embeddedPostgresOptions(dir, dataDir, await runnableBinDir(logger)))).process.pid }),
    restarted: () => embeddedPostgresRestarts.inc(),
    recoversFrom: "its write-ahead log",
    logger,
    checkEveryMs: options.checkEveryMs ?? 1000,
    giveUpAfterMs: 10_000,
  });
}

/** The postmaster's pid when it still runs: its pid file names a live process that is a postgres (not a pid reused since). */
export async function postmasterPid(dataDir: string): Promise<number | undefined> {
  const pid = Number((await readFile(join(dataDir, "postmaster.pid"), "utf8").catch(() => "")).split("\n")[0]);
  if (!(pid > 0) || !isAlive(pid)) return undefined;
  const command = await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "postgres");
  return command.startsWith("postgres") ? pid : undefined;
}

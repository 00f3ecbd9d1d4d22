import { join, resolve } from "node:path";
import pg from "pg";
import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { joinEmbeddedRedis, type EmbeddedRedisUse } from "../redis/embedded-redis-users.js";
import { socketPort, startPostgresServer } from "./postgres-server.js";
import { isAlive } from "../process/is-alive.js";
import { runnableBinDir } from "./postgres-binaries.js";
import { embeddedPostgresOptions, keepEmbeddedPostgres, postmasterPid } from "./keep-embedded-postgres.js";

export interface ResolvedArchiveDatabase {
  url: string;
  /** Done with it: for the embedded one, drops this process's lease; the last process out stops the server. */
  release(): Promise<void>;
}

/** The database the embedded server holds the archive in. */
const database = "streamkeeper";

/**
 * ARCHIVE_DATABASE_URL when set; otherwise the embedded Postgres under DATA_DIR/postgres,
 * shared like the embedded Redis (redis/resolve-redis.ts): reused when one already runs
 * there, else started (initialised on first use), listening on a Unix socket only. Every
 * process using it holds a lease in the embedded Redis (redis/embedded-redis-users.ts),
 * so the last one out stops it and an orphan is adopted.
 */
export async function resolveArchiveDatabase(config: Config, logger: Logger, who: string, redisUrl: string): Promise<ResolvedArchiveDatabase> {
  if (config.env.ARCHIVE_DATABASE_URL) return { url: config.env.ARCHIVE_DATABASE_URL, release: async () => {} };
  const dir = join(resolve(config.env.DATA_DIR), "postgres");
  const dataDir = join(dir, "data");
  const url = `postgres://postgres@${encodeURIComponent(dir)}:${socketPort}/${database}`;
  const stop = async () => {
    const pid = await postmasterPid(dataDir);
    if (pid === undefined) return;
    try {
      process.kill(pid, "SIGINT");
    } catch {
      return;
    }
    const deadline = Date.now() + 15_000;
    while (isAlive(pid) && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 25));
  };
  let started = false;
  if (!(await answers(dir))) {
    const begun = Date.now();
    await startPostgresServer(embeddedPostgresOptions(dir, dataDir, await runnableBinDir(logger)));
    started = true;
    logger.info({ dir, startMs: Date.now() - begun }, "started the embedded Postgres of the archive (data and log in DATA_DIR/postgres)");
  }
  await ensureDatabase(dir);
  // The leases live in the process's own Redis (its lease on an embedded one is the caller's).
  const use: EmbeddedRedisUse = await joinEmbeddedRedis(redisUrl, `${who} (archive)`, logger, undefined, { usersKey: "streamkeeper:embedded-postgres:users", stop }).catch(async (error: unknown) => {
    // No lease (Redis unreachable): no process would ever be the last one out of a server
    // started here, so it stops now rather than outlive the service that gave up on it.
    if (started) await stop();
    throw error;
  });
  if (!started) logger.info({ dir, users: use.others }, use.others > 0 ? "reusing the embedded Postgres already running in DATA_DIR" : "adopted the embedded Postgres left running in DATA_DIR; it stops when the last process using it does");
  // Every process using it watches it; one restarts it when it dies (README.md, The archive).
  const keeper = keepEmbeddedPostgres({ dir, dataDir, logger, answers: () => answers(dir) });
  let releasing: Promise<void> | undefined;
  return {
    url,
    release() {
      releasing ??= (async () => {
        keeper.close();
        if ((await use.leave()) && (await use.stopServer())) logger.info("stopped the embedded Postgres: no other Streamkeeper process uses it");
      })();
      return releasing;
    },
  };
}

async function answers(socketDir: string): Promise<boolean> {
  const client = new pg.Client({ host: socketDir, port: socketPort, user: "postgres", database: "postgres", connectionTimeoutMillis: 2000 });
  client.on("error", () => {});
  const up = await client.connect().then(() => true, () => false);
  await client.end().catch(() => {});
  return up;
}

async function ensureDatabase(socketDir: string): Promise<void> {
  const client = new pg.Client({ host: socketDir, port: socketPort, user: "postgres", database: "postgres" });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${database}`).catch((error: { code?: string }) => {
      if (error.code !== "42P04") throw error;
    });
  } finally {
    await client.end();
  }
}

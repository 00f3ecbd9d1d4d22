import { execFileSync } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";
import type {} from "vitest";
import { systemPostgresBinDir } from "../../src/archive/postgres-server.js";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { startDefaultPortDecoys } from "./default-port-decoys.js";
import { startPostgresOnFreePort } from "./start-postgres-on-free-port.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** The run's throwaway Postgres (the `postgres` database); each test file makes a database of its own (archive-database.ts). */
    postgresUrl: string;
    /** A private copy of the run's build (its `dist/`), which test/helpers/build-cli.ts copies for each test that runs the built CLI. */
    builtDir: string;
  }
}

/** One throwaway redis-server and one Postgres for the whole run; each test file uses its own queue prefix and database. */
export default async function setup(project: TestProject) {
  // Proof that no test falls back to the default ports (a service running on the machine
  // would answer it): a decoy on each one that is free, checked at the end of the run.
  const decoys = await startDefaultPortDecoys();
  // Every temporary folder of the run (test files, the processes they start) goes under one
  // folder of its own, removed at the end: a test that forgets its own leaves nothing behind.
  const previousTmp = process.env.TMPDIR;
  const runTmp = await mkdtemp(join(tmpdir(), "sk-run-"));
  process.env.TMPDIR = runTmp;
  const dir = await mkdtemp(join(tmpdir(), "sk-redis-"));
  const redis = await startRedisServer({ dir, appendOnly: false });
  project.provide("redisUrl", redis.url);
  const binDir = systemPostgresBinDir();
  if (!binDir) throw new Error("initdb was not found in /usr/lib/postgresql/*/bin or on PATH: install Postgres (Debian: apt-get install -y postgresql)");
  const pgDir = await mkdtemp(join(tmpdir(), "sk-postgres-"));
  const postgres = await startPostgresOnFreePort({ binDir, dataDir: join(pgDir, "data"), socketDir: pgDir });
  project.provide("postgresUrl", postgres.url);
  const built = await buildOnce();
  project.provide("builtDir", built);
  return async () => {
    await Promise.all([redis.stop(), postgres.stop()]);
    await rm(built, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
    await rm(pgDir, { recursive: true, force: true });
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
    await rm(runTmp, { recursive: true, force: true });
    await decoys.close();
    if (decoys.hits.length > 0) {
      // vitest reports an error thrown here but keeps the run's exit code: fail it ourselves.
      process.exitCode = 1;
      throw new Error(`tests reached the default ports ${decoys.held.join(" and ")} (a service running there would have answered): ${decoys.hits.join(", ")}; give those tests explicit PORT, ADMIN_PORT or ADMIN_URL`);
    }
  };
}

/**
 * Compiles src/ once for the whole run, as `npm start` does (only when a source is newer than
 * dist/; `npm test` has just built it), then copies dist/ aside: a build started later in
 * the checkout cannot swap files under the tests that run the copy. The copies live under
 * test-artifacts/ in the checkout, where the built code finds node_modules/, web/ and
 * package.json by looking up, as dist/ does.
 */
async function buildOnce(): Promise<string> {
  const root = resolve(import.meta.dirname, "../..");
  execFileSync(process.execPath, ["scripts/build-if-stale.mjs"], { cwd: root, stdio: "inherit" });
  const dir = join(root, "test-artifacts", `built-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  await cp(join(root, "dist"), join(dir, "dist"), { recursive: true });
  return dir;
}

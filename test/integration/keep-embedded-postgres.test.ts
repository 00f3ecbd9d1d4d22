import { spawn } from "node:child_process";
import { once } from "node:events";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { embeddedPostgresOptions, keepEmbeddedPostgres, postmasterPid } from "../../src/archive/keep-embedded-postgres.js";
import { runnableBinDir } from "../../src/archive/postgres-binaries.js";
import { socketPort, startPostgresServer } from "../../src/archive/postgres-server.js";
import { embeddedPostgresRestarts } from "../../src/metrics/archive-metrics.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";

const restarts = async () => (await embeddedPostgresRestarts.get()).values[0]?.value ?? 0;

/** A client on the embedded Postgres's socket in `dir`. */
async function client(dir: string): Promise<pg.Client> {
  const connection = new pg.Client({ host: dir, port: socketPort, user: "postgres", database: "postgres", connectionTimeoutMillis: 2000 });
  connection.on("error", () => {});
  await connection.connect();
  return connection;
}

async function answers(dir: string): Promise<boolean> {
  const connection = await client(dir).catch(() => undefined);
  await connection?.end().catch(() => {});
  return connection !== undefined;
}

/**
 * The archive's embedded Postgres kept (archive/keep-embedded-postgres.ts) as the service
 * keeps it, in this process: a real Postgres on a socket in a folder of its own, killed with
 * SIGKILL, started again from its write-ahead log with the binaries found then.
 */
describe("keeping the embedded Postgres", () => {
  const undo = useCleanup("each");

  it("when the embedded Postgres is SIGKILLed, then it is restarted from its write-ahead log with its data, counted and warned", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-keep-pg-"));
    const dataDir = join(dir, "data");
    undo.push(() => rm(dir, { recursive: true, force: true }));
    const { logger, lines } = capturedLogger("info");
    const first = await startPostgresServer(embeddedPostgresOptions(dir, dataDir, await runnableBinDir(logger)));
    undo.push(async () => {
      // Whichever postmaster runs at the end: the first or the one the keeper started.
      const pid = await postmasterPid(dataDir);
      if (pid === undefined) return;
      process.kill(pid, "SIGINT");
      await expect.poll(() => postmasterPid(dataDir)).toBeUndefined();
    });
    expect(await postmasterPid(dataDir)).toBe(first.process.pid);
    const setup = await client(dir);
    // Durable as the writer's batches are (synchronous_commit on: the server's own setting is off).
    await setup.query("SET synchronous_commit = on; CREATE TABLE kept (id int); INSERT INTO kept VALUES (7)");
    await setup.end();
    const before = await restarts();
    const keeper = keepEmbeddedPostgres({ dir, dataDir, logger, checkEveryMs: 50, answers: () => answers(dir) });
    undo.push(() => keeper.close());

    process.kill(first.process.pid!, "SIGKILL");

    await expect.poll(() => restarts()).toBe(before + 1);
    const second = await postmasterPid(dataDir);
    expect(second).toEqual(expect.any(Number));
    expect(second).not.toBe(first.process.pid);
    const warned = lines.filter((line) => line.level === 40);
    expect(warned).toEqual([expect.objectContaining({ pid: second, msg: "the embedded Postgres of the archive had died; restarted it from its write-ahead log" })]);
    const after = await client(dir);
    try {
      expect((await after.query("SELECT id FROM kept")).rows).toEqual([{ id: 7 }]);
      // Started as every embedded Postgres is: its socket in the folder, its log in postgres.log.
      expect((await after.query("SHOW unix_socket_directories")).rows[0]).toEqual({ unix_socket_directories: dir });
      expect((await after.query("SHOW listen_addresses")).rows[0]).toEqual({ listen_addresses: "" });
    } finally {
      await after.end();
    }
    expect(keeper.healthy()).toBe(true);
  }, 120_000);

  it("when the pid file is missing, unreadable, or names a process that is gone or is no postgres, then no postmaster runs", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-pid-"));
    undo.push(() => rm(dataDir, { recursive: true, force: true }));
    expect(await postmasterPid(dataDir)).toBeUndefined();
    await writeFile(join(dataDir, "postmaster.pid"), "not a pid\n/data\n");
    expect(await postmasterPid(dataDir)).toBeUndefined();
    await writeFile(join(dataDir, "postmaster.pid"), "0\n/data\n");
    expect(await postmasterPid(dataDir)).toBeUndefined();
    const gone = spawn("true");
    await once(gone, "exit");
    await writeFile(join(dataDir, "postmaster.pid"), `${gone.pid}\n/data\n`);
    expect(await postmasterPid(dataDir)).toBeUndefined();
    // A pid reused since by another program (this test's own node).
    await writeFile(join(dataDir, "postmaster.pid"), `${process.pid}\n/data\n`);
    expect(await postmasterPid(dataDir)).toBeUndefined();
    // A live program named postgres: its pid (the first line only).
    const binDir = join(dataDir, "bin");
    await mkdir(binDir);
    await copyFile("/bin/sleep", join(binDir, "postgres"));
    const postgres = spawn(join(binDir, "postgres"), ["600"]);
    undo.push(() => void postgres.kill("SIGKILL"));
    await writeFile(join(dataDir, "postmaster.pid"), `${postgres.pid}\n/data\n5432\n`);
    expect(await postmasterPid(dataDir)).toBe(postgres.pid);
  });
});

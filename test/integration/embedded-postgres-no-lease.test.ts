import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { postmasterPid } from "../../src/archive/keep-embedded-postgres.js";
import { resolveArchiveDatabase } from "../../src/archive/resolve-archive-database.js";
import { loadConfig } from "../../src/config/config.js";
import { freePort } from "../../src/redis/redis-server.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";

/**
 * The embedded Postgres's lease lives in Redis (archive/resolve-archive-database.ts): a
 * process that started the server but cannot take a lease has no way to be the last one
 * out, so it must not leave the server running behind it.
 */
describe("the embedded Postgres without a lease", () => {
  const undo = useCleanup("each");

  it("when the service starts the embedded Postgres but its Redis does not answer, then the archive fails and the Postgres it started is stopped, not left running", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-pg-no-lease-"));
    undo.push(() => rm(dir, { recursive: true, force: true }));
    const dataDir = join(dir, "postgres", "data");
    undo.push(async () => {
      const pid = await postmasterPid(dataDir);
      if (pid === undefined) return;
      process.kill(pid, "SIGINT");
      await expect.poll(() => postmasterPid(dataDir), { timeout: 15_000 }).toBeUndefined();
    });
    const config = loadConfig({ DATA_DIR: dir, DOWNSTREAM_URL: "http://127.0.0.1:9/", ARCHIVE: "on" });
    const nobody = `redis://127.0.0.1:${await freePort()}`;
    const { logger } = capturedLogger("info");
    await expect(resolveArchiveDatabase(config, logger, "test", nobody)).rejects.toThrow(/Redis is not reachable/);
    expect(await postmasterPid(dataDir)).toBeUndefined();
  }, 60_000);
});

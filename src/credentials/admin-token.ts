import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ConfigError, type Env } from "../config/config.js";
import { dataDirProblem } from "../config/data-dir-problem.js";
import { writeFileOnce } from "./write-file-once.js";

/** The service's admin token and where it came from: `file` when it was generated into DATA_DIR (or read back from there). */
export interface AdminToken {
  token: string;
  file?: string;
}

/** Where the generated admin token lives: `<DATA_DIR>/admin-token`, mode 0600, one line. */
export function adminTokenFile(dataDir: string): string {
  return join(resolve(dataDir), "admin-token");
}

/**
 * The service's admin token: ADMIN_TOKEN when set (it always wins), else the one kept in
 * DATA_DIR, generated there by the first start, so the admin API, the operator view and
 * every command run on the same DATA_DIR work with nothing set. Never logged, only its file.
 */
export async function resolveAdminToken(env: Pick<Env, "ADMIN_TOKEN" | "DATA_DIR">): Promise<AdminToken> {
  if (env.ADMIN_TOKEN !== undefined) return { token: env.ADMIN_TOKEN };
  const file = adminTokenFile(env.DATA_DIR);
  try {
    const kept = readAdminTokenFile(file);
    if (kept !== undefined) return { token: kept, file };
    const created = randomBytes(24).toString("base64url");
    // Of two processes starting at once on one DATA_DIR, the second reads the first's.
    if (await writeFileOnce(file, `${created}\n`)) return { token: created, file };
    return { token: readAdminTokenFile(file)!, file };
  } catch (error) {
    return dataDirProblem(env.DATA_DIR, "keep the generated admin token", "set ADMIN_TOKEN")(error as NodeJS.ErrnoException);
  }
}

/** The token kept in `file`; undefined when there is none. A file that holds no token (empty, damaged) is a ConfigError naming it. */
export function readAdminTokenFile(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const token = text.replace(/\r?\n$/, "");
  // One line of printable characters: what the service writes, and what a bearer header can carry.
  if (/^[\x21-\x7e]+$/.test(token)) return token;
  throw new ConfigError([
    `${file} ${text.trim() === "" ? "is empty" : "does not hold an admin token (one line of printable characters)"}: delete it, and the next start generates a new one (use it wherever the old one was kept), or set ADMIN_TOKEN`,
  ]);
}

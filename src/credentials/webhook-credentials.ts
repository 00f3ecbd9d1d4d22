import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ConfigError, type Config, type WebhookAuth } from "../config/config.js";
import { dataDirProblem } from "../config/data-dir-problem.js";
import { writeFileOnce } from "./write-file-once.js";

export type ResolvedWebhookAuth = Exclude<WebhookAuth, { generated: true }>;

export const generatedUsername = "streamkeeper";

/** Where generated basic credentials live: `<DATA_DIR>/webhook-credentials.json`, mode 0600. */
export function credentialsFile(dataDir: string): string {
  return join(resolve(dataDir), "webhook-credentials.json");
}

/**
 * The credentials the tenant must send. With WEBHOOK_AUTH=basic and no user name or
 * password configured, a random password is generated once and kept in DATA_DIR, so
 * `npm start` is secure out of the box; it is never logged, only its file path.
 */
export async function resolveWebhookAuth(config: Config): Promise<ResolvedWebhookAuth> {
  const auth = config.webhookAuth;
  if (!("generated" in auth)) return auth;
  const file = credentialsFile(config.env.DATA_DIR);
  const unusable = dataDirProblem(config.env.DATA_DIR, "keep the generated webhook credentials", "set WEBHOOK_USERNAME and WEBHOOK_PASSWORD");
  return (await readCredentials(file).catch(unusable)) ?? (await generateCredentials(file).catch(unusable));
}

async function generateCredentials(file: string): Promise<ResolvedWebhookAuth> {
  const created = { username: generatedUsername, password: randomBytes(24).toString("base64url") };
  if (!(await writeFileOnce(file, JSON.stringify(created, null, 2) + "\n"))) return (await readCredentials(file))!;
  return { method: "basic", ...created };
}

/** The generated credentials kept in `file`; undefined when there is none. A file that does not hold them stops the start. */
async function readCredentials(file: string): Promise<ResolvedWebhookAuth | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  let stored: { username?: unknown; password?: unknown } | undefined;
  try {
    stored = JSON.parse(text) as typeof stored;
  } catch {
    // not JSON: named below
  }
  if (typeof stored?.username === "string" && stored.username !== "" && typeof stored.password === "string" && stored.password !== "") {
    return { method: "basic", username: stored.username, password: stored.password };
  }
  throw new ConfigError([
    `${file} ${text.trim() === "" ? "is empty" : "does not hold generated webhook credentials ({\"username\",\"password\"} as JSON)"}: restore it from a backup, or delete it to generate new credentials (then point the tenant's stream at them again: streamkeeper streams connect), or set WEBHOOK_USERNAME and WEBHOOK_PASSWORD`,
  ]);
}

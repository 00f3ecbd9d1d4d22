import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Config, WebhookAuth } from "./config.js";

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
  try {
    const stored = JSON.parse(await readFile(file, "utf8")) as { username?: unknown; password?: unknown };
    if (typeof stored.username === "string" && typeof stored.password === "string") {
      return { method: "basic", username: stored.username, password: stored.password };
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const created = { username: generatedUsername, password: randomBytes(24).toString("base64url") };
  await mkdir(resolve(config.env.DATA_DIR), { recursive: true });
  await writeFile(file, JSON.stringify(created, null, 2) + "\n", { mode: 0o600 });
  await chmod(file, 0o600);
  return { method: "basic", ...created };
}

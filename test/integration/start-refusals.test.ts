import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { credentialsFile, resolveWebhookAuth } from "../../src/credentials/webhook-credentials.js";
import { builtCli } from "../helpers/start-service-process.js";

const cli = builtCli();

async function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [cli, "start"], {
    env: { PATH: process.env.PATH, HOST: "127.0.0.1", PORT: "0", ADMIN_PORT: "0", DOWNSTREAM_URL: "http://127.0.0.1:9/", REDIS_URL: "redis://127.0.0.1:1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const [code] = (await once(child, "close")) as [number];
  return { code, stdout, stderr };
}

describe("start: exact secrets and a damaged credentials file", () => {
  it.each([
    ["WEBHOOK_PASSWORD", { WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: " pw " }],
    ["WEBHOOK_PASSWORD", { WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: "pw\t" }],
    ["WEBHOOK_TOKEN", { WEBHOOK_AUTH: "bearer", WEBHOOK_TOKEN: " token-value" }],
    ["WEBHOOK_HEADER_VALUE", { WEBHOOK_AUTH: "custom_header", WEBHOOK_HEADER_NAME: "x-key", WEBHOOK_HEADER_VALUE: "value\n" }],
    ["ADMIN_TOKEN", { WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: "pw", ADMIN_TOKEN: "admin " }],
    ["MGMT_CLIENT_SECRET", { WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: "pw", MGMT_CLIENT_SECRET: " s" }],
  ])("when %s has whitespace around it, then the start stops: exit 2, one line naming the setting, the value not shown", async (setting, env) => {
    const result = await start({ DATA_DIR: await mkdtemp(join(tmpdir(), "sk-secret-")), ...env });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^error: bad configuration: ${setting}: has leading or trailing whitespace.*\\(got "\\[redacted\\]"\\)`));
  });

  it("when a secret has whitespace inside it, then it is used as given", () => {
    const config = loadConfig({ WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: "p w" });
    expect(config.webhookAuth).toEqual({ method: "basic", username: "tenant", password: "p w" });
  });

  it.each([
    ["empty", "", /is empty/],
    ["not JSON", '{"username":"streamkeeper","pass', /does not hold generated webhook credentials/],
    ["JSON without a password", '{"username":"streamkeeper"}', /does not hold generated webhook credentials/],
  ])("when the generated credentials file is %s, then the start stops: exit 2 naming the file", async (_kind, content, says) => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-creds-"));
    await writeFile(credentialsFile(dataDir), content);
    const result = await start({ DATA_DIR: dataDir });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`error: bad configuration: ${credentialsFile(dataDir)}`);
    expect(lines[0]).toMatch(says);
  });

  it("when several starts generate credentials at once, then they all use the one file's, written whole with mode 0600, no temporary file left", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-creds-race-"));
    const config = loadConfig({ DATA_DIR: dataDir });
    const resolved = await Promise.all(Array.from({ length: 8 }, () => resolveWebhookAuth(config)));
    expect(new Set(resolved.map((auth) => JSON.stringify(auth))).size).toBe(1);
    expect(await resolveWebhookAuth(config)).toEqual(resolved[0]);
    expect(await readdir(dataDir)).toEqual(["webhook-credentials.json"]);
    expect((await stat(credentialsFile(dataDir))).mode & 0o777).toBe(0o600);
  });
});

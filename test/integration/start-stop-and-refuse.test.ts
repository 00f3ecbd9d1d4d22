import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { explicitPorts } from "../helpers/explicit-ports.js";
import { logLines as completeLogLines, type LogLine } from "../helpers/log-lines.js";
import { userEvent } from "../helpers/fixtures.js";
import { startOldRedis } from "../helpers/start-old-redis.js";
import { useCleanup } from "../helpers/cleanup.js";
import { basicAuthorization } from "../helpers/credentials.js";
import { builtCli } from "../helpers/start-service-process.js";

const cli = builtCli();

/** `streamkeeper start` as its own process, output captured; the test stops it. */
function start(role: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [cli, "start", "--role", role], { env: { PATH: process.env.PATH, ...explicitPorts(["start"], env) }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return { child, output: () => ({ stdout, stderr }) };
}

/** The JSON log lines of stdout (complete lines only). */
const logLines = (stdout: string) => completeLogLines<LogLine & { signal?: string; url?: string }>(stdout);

/** README.md#set-up, README.md#commands: SIGINT stops as SIGTERM does; generated credentials are private; too old a Redis is a setting to change. */
describe("streamkeeper start: stopping on SIGINT, private credentials, an old Redis", () => {
  const cleanup = useCleanup("each", { quiet: true });
  const dataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-signals-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  };

  it("when started with no credentials configured, then the generated credentials file is readable by its owner only (mode 0600), and SIGINT stops the service cleanly: exit 0, its port released", async () => {
    const dir = await dataDir();
    const { child, output } = start("all", {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: dir,
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      DOWNSTREAM_URL: "http://127.0.0.1:9/",
      SHUTDOWN_TIMEOUT_MS: "2000",
    });
    cleanup.push(async () => child.exitCode === null && child.kill("SIGKILL"));
    await expect.poll(() => logLines(output().stdout).some((line) => line.msg.startsWith("admin surface"))).toBe(true);
    const publicUrl = logLines(output().stdout).find((line) => line.msg === "receiving webhooks")!.url!;

    const file = join(dir, "webhook-credentials.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const credentials = JSON.parse(await readFile(file, "utf8")) as { username: string; password: string };
    const res = await fetch(`${publicUrl}/webhooks`, {
      method: "POST",
      body: JSON.stringify(userEvent()),
      headers: { "content-type": "application/json", authorization: basicAuthorization(credentials.username, credentials.password) },
    });
    expect(res.status).toBe(202);

    child.kill("SIGINT");
    const [code, signal] = await once(child, "close");
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    const lines = logLines(output().stdout);
    expect(lines.find((line) => line.msg.startsWith("shutting down"))).toMatchObject({ signal: "SIGINT" });
    expect(lines.at(-1)?.msg).toBe("stopped");
    expect(lines.filter((line) => line.level >= 50), "no error logged while stopping").toEqual([]);
    await expect(fetch(`${publicUrl}/healthz`)).rejects.toThrow();
  });

  it("when REDIS_URL points at a Redis older than 6.2, then start exits 2 with one line naming the version and what to change", async () => {
    const old = await startOldRedis("6.0.16");
    cleanup.push(() => old.close());
    const { child, output } = start("receiver", {
      REDIS_URL: old.url,
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: await dataDir(),
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      DOWNSTREAM_URL: "http://127.0.0.1:9/",
      WEBHOOK_USERNAME: "tenant",
      WEBHOOK_PASSWORD: "s3cret-webhook-password",
    });
    cleanup.push(async () => child.exitCode === null && child.kill("SIGKILL"));
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    expect(output().stderr.trim().split("\n")).toEqual([
      "error: bad configuration: Redis 6.0.16 at REDIS_URL is too old: Streamkeeper needs Redis 6.2.0 or newer; upgrade it or point REDIS_URL at a newer one",
    ]);
    // It asked the server what it is, and stopped there: no port was opened for webhooks.
    expect(old.commands.some(([name]) => name?.toUpperCase() === "INFO")).toBe(true);
    expect(logLines(output().stdout).some((line) => line.msg === "receiving webhooks")).toBe(false);
  });

  it("when the Redis is exactly 6.2.0, then start goes on past the version check", async () => {
    const enough = await startOldRedis("6.2.0");
    cleanup.push(() => enough.close());
    const { child, output } = start("receiver", {
      REDIS_URL: enough.url,
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: await dataDir(),
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      DOWNSTREAM_URL: "http://127.0.0.1:9/",
      WEBHOOK_USERNAME: "tenant",
      WEBHOOK_PASSWORD: "s3cret-webhook-password",
    });
    cleanup.push(async () => child.exitCode === null && child.kill("SIGKILL"));
    // The fake answers OK to everything after INFO: the start gets past the check (or fails later, not for the version).
    await expect.poll(() => child.exitCode !== null || logLines(output().stdout).some((line) => line.msg === "receiving webhooks")).toBe(true);
    expect(output().stderr).not.toMatch(/too old/);
  });
});

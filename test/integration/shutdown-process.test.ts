import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { answers, startRedisServer } from "../../src/redis/redis-server.js";
import { userEvent } from "../helpers/fixtures.js";
import { logLines, loggedUrl, type LogLine } from "../helpers/log-lines.js";
import { until } from "../helpers/until.js";
import { testCredentials } from "../helpers/service-process-env.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { builtCli } from "../helpers/start-service-process.js";

const cli = builtCli();
const basic = `Basic ${Buffer.from(`${testCredentials.username}:${testCredentials.password}`).toString("base64")}`;

interface Started {
  child: ChildProcess;
  publicUrl: string;
  adminUrl: string;
  lines(): Array<LogLine & { running?: number }>;
  /** Resolves with the exit code and the time of the exit. */
  exited: Promise<{ code: number | null; at: number }>;
}

/** `node dist/cli/main.js start` with exactly `env` (plus PATH), on ports 0 read back from its log; resolves once its admin surface listens. */
async function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [cli, "start"], {
    env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", ADMIN_HOST: "127.0.0.1", PORT: "0", ADMIN_PORT: "0", ARCHIVE: "off", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  // The time of the exit, and the code once the output is read to its end ("close"): the
  // last lines ("stopped") may still be in the pipe when the process exits.
  let exitedAt = 0;
  child.once("exit", () => (exitedAt = Date.now()));
  const exited = once(child, "close").then(([code]) => ({ code: code as number | null, at: exitedAt }));
  const lines = () => logLines<LogLine & { running?: number }>(stdout);
  const adminUrl = await until(
    "streamkeeper start listening on its admin port",
    () => {
      if (child.exitCode !== null) throw new Error(`streamkeeper start exited with ${child.exitCode}: ${stderr.slice(-2000)}`);
      return loggedUrl(stdout, "admin");
    },
    { withinMs: 60_000, detail: () => `${stdout.slice(-1000)}\n${stderr.slice(-1000)}` },
  ).catch(async (error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  // The ingress listens before the admin surface does.
  return { child, publicUrl: loggedUrl(stdout, "public")!, adminUrl, lines, exited };
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The stop of `streamkeeper start` (start-command.ts, shutdown/close-workers.ts), as a process with its own embedded Redis. */
describe("stopping the service process", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => {});
    cleanup.length = 0;
  });

  it("when a downstream takes 30 s, events are in flight and two SIGINTs come 1 s apart, then the process exits before the answers, its embedded redis-server is gone, and after a restart every acknowledged event is delivered", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-second-signal-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    // Answers after 30 s: an unhurried stop would wait for them, a hurried one has that long
    // to exit first, however loaded the machine.
    const sink: SinkServer = await startSinkServer(() => ({ status: 200, delayMs: 30_000 }));
    cleanup.push(() => sink.close());
    const routesFile = join(dataDir, "routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "slow", match: "*", url: sink.url, timeoutMs: 120_000, concurrency: 10 }]));
    // The embedded Redis (REDIS_URL empty) under its own DATA_DIR; a long SHUTDOWN_TIMEOUT_MS,
    // so only the second signal can end the wait before the 30 s answers.
    const env = { REDIS_URL: "", DATA_DIR: dataDir, ROUTES_FILE: routesFile, WEBHOOK_USERNAME: testCredentials.username, WEBHOOK_PASSWORD: testCredentials.password, SHUTDOWN_TIMEOUT_MS: "60000" };
    const first = await start(env);
    cleanup.push(async () => first.child.exitCode === null && first.child.kill("SIGKILL"));
    const redisPid = Number((await readFile(join(dataDir, "redis", "redis.pid"), "utf8")).trim());
    cleanup.push(async () => isAlive(redisPid) && process.kill(redisPid, "SIGKILL"));
    expect(isAlive(redisPid)).toBe(true);

    const acknowledged: string[] = [];
    for (let i = 0; i < 5; i++) {
      const event = userEvent();
      const answer = await fetch(`${first.publicUrl}/webhooks/stream-a`, { method: "POST", headers: { authorization: basic, "content-type": "application/cloudevents+json" }, body: JSON.stringify(event) });
      expect(answer.status).toBe(202);
      acknowledged.push(event.id);
    }
    await sink.untilReceived(5, 60_000);

    first.child.kill("SIGINT");
    await new Promise((ok) => setTimeout(ok, 1000));
    first.child.kill("SIGINT");
    const { code, at } = await first.exited;
    expect(code).toBe(0);
    // Before any answer: the stop did not wait for the downstream (an unhurried stop would).
    expect(sink.requests.filter((request) => request.answeredAt !== undefined && request.answeredAt <= at)).toEqual([]);
    const stopLines = first.lines().map((line) => line.msg);
    expect(stopLines).toContain("stopped");
    expect(first.lines().find((line) => line.msg.startsWith("stopping now (a second signal)"))).toMatchObject({ running: 5 });
    expect(stopLines).toContain("stopped the embedded redis-server: no other Streamkeeper process uses it");
    // Nothing left on the data directory: the redis-server the process led is gone, its socket silent.
    await expect.poll(() => isAlive(redisPid)).toBe(false);
    expect(await answers({ path: join(dataDir, "redis", "redis.sock") })).toBe(false);

    // The restart delivers every acknowledged event from the append-only file.
    sink.answer = () => ({ status: 200 });
    const second = await start(env);
    cleanup.push(async () => second.child.exitCode === null && second.child.kill("SIGKILL"));
    const delivered = () => new Set(sink.requests.filter((request) => request.status === 200).map((request) => String(request.headers["webhook-id"])));
    await sink.until(() => acknowledged.every((id) => delivered().has(id)), 90_000);
    expect([...delivered()].sort()).toEqual([...acknowledged].sort());
    // Cut attempts went back to the queue: each event answered 200 once.
    expect(sink.requests.filter((request) => request.status === 200)).toHaveLength(acknowledged.length);
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  });

  it("when Redis is unreachable and one SIGINT comes, then the process stops without waiting for SHUTDOWN_TIMEOUT_MS and says nothing of deliveries still running", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-stop-no-redis-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const redis = await startRedisServer({ dir, appendOnly: false });
    cleanup.push(() => redis.stop());
    // A deadline far beyond the test's own timeout: a stop that waited for it would fail the test.
    const service = await start({ REDIS_URL: redis.url, QUEUE_PREFIX: `test-${Date.now()}`, DOWNSTREAM_URL: "http://127.0.0.1:9/", WEBHOOK_USERNAME: testCredentials.username, WEBHOOK_PASSWORD: testCredentials.password, SHUTDOWN_TIMEOUT_MS: "600000" });
    cleanup.push(async () => service.child.exitCode === null && service.child.kill("SIGKILL"));
    await redis.kill();
    await expect.poll(() => service.lines().some((line) => line.msg.startsWith("Redis does not answer"))).toBe(true);

    service.child.kill("SIGINT");
    expect((await service.exited).code).toBe(0);
    const lines = service.lines();
    expect(lines.map((line) => line.msg)).toContain("stopped");
    expect(lines.filter((line) => /still running/.test(line.msg))).toEqual([]);
    // The outage said once, not once per connection, and no library stack anywhere.
    expect(lines.filter((line) => line.msg.startsWith("Redis does not answer: webhooks"))).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain("\"stack\"");
  });
});

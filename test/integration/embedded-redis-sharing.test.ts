import { existsSync } from "node:fs";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { runCli } from "../chaos/run-cli.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { webhookAuthorization } from "../helpers/credentials.js";
// Whether the server still runs, as the service itself judges it: a server that exited
// but is not yet reaped by its parent (a zombie: its parent is gone, and the test runner
// reaps nothing) has stopped; a bare kill(pid, 0) would call it alive.
import { isAlive } from "../../src/process/is-alive.js";

/**
 * The embedded redis-server (no REDIS_URL) shared by real processes on one DATA_DIR: none
 * stops it under another, the last one out stops it, an orphan of kill -9 is adopted and
 * stopped.
 */
const dirs: string[] = [];
const running: ServiceProcess[] = [];
const redisPids: number[] = [];

afterEach(async () => {
  for (const service of running.splice(0)) await service.kill();
});
afterAll(async () => {
  for (const pid of redisPids) if (isAlive(pid)) process.kill(pid, "SIGKILL");
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sk-emb-"));
  dirs.push(dir);
  return dir;
}

function envFor(dir: string): Record<string, string> {
  return {
    DATA_DIR: dir,
    WEBHOOK_USERNAME: testCredentials.username,
    WEBHOOK_PASSWORD: testCredentials.password,
    DOWNSTREAM_URL: "http://127.0.0.1:9/nowhere",
    LOG_LEVEL: "info",
    SHUTDOWN_TIMEOUT_MS: "2000",
    ADMIN_TOKEN: "embedded-admin-token",
  };
}

async function start(dir: string): Promise<ServiceProcess> {
  const service = await startServiceProcess("all", envFor(dir));
  running.push(service);
  return service;
}

/** The pid of the redis-server answering on DATA_DIR's socket. */
async function embeddedRedisPid(dir: string): Promise<number> {
  const redis = new Redis({ path: join(dir, "redis", "redis.sock"), maxRetriesPerRequest: 1 });
  try {
    const pid = Number(/process_id:(\d+)/.exec(await redis.info("server"))![1]);
    redisPids.push(pid);
    return pid;
  } finally {
    redis.disconnect();
  }
}

async function ready(service: ServiceProcess): Promise<number> {
  return (await fetch(`${service.adminUrl}/readyz`)).status;
}

/** The service still takes webhooks: a 202 means the event is stored in Redis. */
async function accepts(service: ServiceProcess, id: string): Promise<number> {
  const answer = await fetch(`${service.publicUrl}/webhooks/est_aD5AUDqZbHFcMoEx2LxAk9`, {
    method: "POST",
    headers: { authorization: webhookAuthorization, "content-type": "application/json" },
    body: JSON.stringify({ id, source: "urn:test", specversion: "1.0", type: "user.created", data: {} }),
  });
  return answer.status;
}

/** Runs `body`; should it fail, the error carries the services' output and the embedded server's log. */
async function withLogsOnFailure(dir: string, services: ServiceProcess[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    const redisLog = await readFile(join(dir, "redis", "redis.log"), "utf8").catch(() => "(no redis.log)");
    const outputs = services.map((service, index) => `--- service ${index + 1} (pid ${service.pid}):\n${service.output()}`).join("\n");
    throw new Error(`${String(error)}\n${outputs}\n--- redis.log:\n${redisLog}`, { cause: error });
  }
}

async function stopWith(service: ServiceProcess, signal: NodeJS.Signals): Promise<number | null> {
  const exited = once(service.child, "close");
  service.child.kill(signal);
  const [code] = await exited;
  running.splice(running.indexOf(service), 1);
  return code as number | null;
}

describe("the embedded Redis shared by several processes", () => {
  it("when a CLI command runs while the service uses it, then it keeps running, and the service's stop stops it", async () => {
    const dir = await dataDir();
    const service = await start(dir);
    const pid = await embeddedRedisPid(dir);
    // The command asks this service (ADMIN_URL), never one on the default ports.
    const run = await runCli(["dead-letters", "list"], { DATA_DIR: dir, ADMIN_URL: service.adminUrl, ADMIN_TOKEN: "embedded-admin-token" });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("no dead letters\n");
    expect(isAlive(pid)).toBe(true);
    expect(await ready(service)).toBe(200);
    expect(await accepts(service, "evt_afterthecli00000000000")).toBe(202);

    expect(await stopWith(service, "SIGTERM")).toBe(0);
    expect(isAlive(pid)).toBe(false);
  });

  for (const first of [0, 1]) {
    it(`when two services share one DATA_DIR and the ${first === 0 ? "first" : "second"} started stops first, then the other keeps working, and the last stop stops Redis`, async () => {
      const dir = await dataDir();
      const services = [await start(dir), await start(dir)];
      const pid = await embeddedRedisPid(dir);
      const [leaving, staying] = first === 0 ? services : [services[1]!, services[0]!];
      expect(await stopWith(leaving!, "SIGTERM")).toBe(0);
      expect(isAlive(pid)).toBe(true);
      expect(await ready(staying!)).toBe(200);
      expect(await accepts(staying!, `evt_stayingalive${first}000000000`)).toBe(202);
      expect(staying!.output()).not.toContain("stopped the embedded redis-server");
      expect(leaving!.output()).toContain("the embedded redis-server keeps running: another Streamkeeper process still uses it");

      expect(await stopWith(staying!, "SIGTERM")).toBe(0);
      expect(isAlive(pid)).toBe(false);
    });
  }

  it("when a start fails on its admin port (taken), then exit 2 and no redis-server was started", async () => {
    const dir = await dataDir();
    const taken = createServer();
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    const { port } = taken.address() as AddressInfo;
    try {
      const run = await runCli(["start"], { ...envFor(dir), HOST: "127.0.0.1", PORT: "0", ADMIN_HOST: "127.0.0.1", ADMIN_PORT: String(port) });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`error: bad configuration: ADMIN_PORT ${port} is already in use`);
      // The ports are bound before anything else: the start stops before it starts a redis-server.
      expect(run.stdout).not.toContain("started the embedded redis-server");
      expect(existsSync(join(dir, "redis", "redis.sock"))).toBe(false);
    } finally {
      taken.close();
    }
  });

  it("when the service is killed with -9, then the next start adopts the orphan and its stop (SIGHUP, a closed terminal) leaves no redis-server behind", async () => {
    const dir = await dataDir();
    const services: ServiceProcess[] = [];
    // Once in CI (2026-11-27) the socket was gone at one of the two reads of the pid
    // (ENOENT), not reproduced since: a failure says what each process and the server logged.
    await withLogsOnFailure(dir, services, async () => {
      const killed = await start(dir);
      services.push(killed);
      const pid = await embeddedRedisPid(dir);
      await killed.kill();
      running.splice(running.indexOf(killed), 1);
      expect(isAlive(pid)).toBe(true);

      const adopter = await start(dir);
      services.push(adopter);
      expect(await embeddedRedisPid(dir)).toBe(pid);
      expect(adopter.output()).toContain("adopted the embedded redis-server left running in DATA_DIR");
      expect(await stopWith(adopter, "SIGHUP")).toBe(0);
      expect(isAlive(pid)).toBe(false);
      expect(adopter.output()).toContain("stopped the embedded redis-server: no other Streamkeeper process uses it");
    });
  });
});

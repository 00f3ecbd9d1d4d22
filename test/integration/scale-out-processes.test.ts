import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { buildCli } from "../helpers/build-cli.js";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { loggedUrl } from "../helpers/log-lines.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";
import { startSinkServer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";


interface Running {
  role: "receiver" | "worker";
  child: ChildProcess;
  adminUrl: string;
  publicUrl?: string;
  stderr(): string;
}

/**
 * Scale-out as it is deployed: two `start --role receiver` and two `start --role worker`
 * processes of the built CLI on one Redis, then on a Redis Cluster. Events are spread over
 * both receivers, a quarter of them sent to both at once; each route must get each
 * matching event once.
 */
let outDir: string;
beforeAll(async () => {
  outDir = await buildCli("scale-out");
});
afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

describe.each([
  { redis: "one Redis", start: async () => ({ url: inject("redisUrl"), stop: async () => {} }) },
  { redis: "a three-master Redis Cluster", start: () => startRedisCluster(3) },
])("scale-out: two receiver and two worker processes on $redis", ({ start }) => {
  let redis: { url: string; stop(): Promise<void> };
  let dataDir: string;
  let users: SinkServer;
  let everything: SinkServer;
  let env: Record<string, string>;
  const running: Running[] = [];

  beforeAll(async () => {
    redis = await start();
    dataDir = await mkdtemp(join(tmpdir(), "sk-scale-"));
    users = await startSinkServer();
    everything = await startSinkServer();
    const routesFile = join(dataDir, "routes.json");
    await writeFile(
      routesFile,
      JSON.stringify([
        { name: "users", match: "user.*", url: users.url, concurrency: 8 },
        { name: "everything", match: "*", url: everything.url, concurrency: 8 },
      ]),
    );
    env = serviceProcessEnv({
      REDIS_URL: redis.url,
      ROUTES_FILE: routesFile,
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      ADMIN_HOST: "127.0.0.1",
      SHUTDOWN_TIMEOUT_MS: "3000",
      DISPATCH_BACKOFF_BASE_MS: "20",
    });
    const roles = ["receiver", "receiver", "worker", "worker"] as const;
    running.push(...(await Promise.all(roles.map((role) => startProcess(outDir, role, env)))));
  });

  afterAll(async () => {
    for (const process of running) process.child.kill("SIGKILL");
    await users?.close();
    await everything?.close();
    await redis?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("when events are spread over both receivers, some sent to both at once, then each route gets each of its events exactly once, from both workers", async () => {
    const [receiverA, receiverB] = running.filter((process) => process.role === "receiver") as [Running, Running];
    const events = Array.from({ length: 400 }, (_, index) => userEvent({ type: index % 2 === 0 ? "user.updated" : "organization.updated" }));
    const started = Date.now();

    const post = async (receiver: Running, body: string) => {
      const answer = await fetch(`${receiver.publicUrl}/webhooks`, { method: "POST", body, headers: { authorization, "content-type": "application/json" } });
      expect(answer.status, receiver.stderr()).toBe(202);
      return (await answer.json()) as { accepted: number; duplicates: number };
    };
    // 20 requests in flight; every 4th event goes to both receivers concurrently (the
    // tenant's retry racing its first attempt, landing on another replica).
    const answers: Array<{ accepted: number; duplicates: number }> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < events.length) {
          const index = next++;
          const body = JSON.stringify(events[index]);
          const first = index % 2 === 0 ? receiverA : receiverB;
          const second = first === receiverA ? receiverB : receiverA;
          if (index % 4 === 0) answers.push(...(await Promise.all([post(first, body), post(second, body)])));
          else answers.push(await post(first, body));
        }
      }),
    );
    const sent = answers.length;
    expect(answers.reduce((sum, answer) => sum + answer.accepted, 0)).toBe(events.length);
    expect(answers.reduce((sum, answer) => sum + answer.duplicates, 0)).toBe(sent - events.length);

    const expected = {
      users: events.filter((event) => event.type.startsWith("user.")).map((event) => event.id),
      everything: events.map((event) => event.id),
    };
    const ids = (requests: SinkRequest[]) => requests.map((request) => String(request.headers["webhook-id"]));
    await users.until((requests) => new Set(ids(requests)).size >= expected.users.length, 60_000);
    await everything.until((requests) => new Set(ids(requests)).size >= expected.everything.length, 60_000);
    const elapsedMs = Date.now() - started;
    await untilDrained(env, ["users", "everything"]);

    for (const [route, sink] of [["users", users], ["everything", everything]] as const) {
      expect(ids(sink.requests).sort(), route).toEqual(expected[route].slice().sort());
    }
    // Both workers took part, and both receivers stored events.
    const delivered = await Promise.all(running.filter((p) => p.role === "worker").map((p) => metricSum(p, "streamkeeper_dispatch_total", 'outcome="delivered"')));
    expect(delivered.every((count) => count > 0), `deliveries per worker: ${delivered.join(", ")}`).toBe(true);
    expect(delivered.reduce((a, b) => a + b, 0)).toBe(expected.users.length + expected.everything.length);
    const received = await Promise.all([receiverA, receiverB].map((p) => metricSum(p, "streamkeeper_events_received_total", 'origin="webhook"')));
    expect(received.every((count) => count > 0)).toBe(true);
    expect(received.reduce((a, b) => a + b, 0)).toBe(events.length);

    const duplicates = (sink: SinkServer) => sink.requests.length - new Set(ids(sink.requests)).size;
    console.info(
      `scale-out on ${redis.url.startsWith("redis+cluster") ? "a Redis Cluster" : "one Redis"}: ${events.length} events in ${sent} requests over 2 receivers; users ${users.requests.length} deliveries ` +
        `(${duplicates(users)} duplicate), everything ${everything.requests.length} (${duplicates(everything)} duplicate); ` +
        `deliveries per worker ${delivered.join("/")}; ${elapsedMs} ms from first request to last delivery`,
    );
  });

  it("when each process gets SIGTERM, then it stops cleanly with exit 0", async () => {
    const codes = await Promise.all(
      running.map(async (process) => {
        const exited = once(process.child, "close");
        process.child.kill("SIGTERM");
        const [code] = (await exited) as [number | null];
        return { role: process.role, code, stderr: process.stderr() };
      }),
    );
    for (const { role, code, stderr } of codes) expect(code, `${role}: ${stderr}`).toBe(0);
  });
});

async function startProcess(outDir: string, role: "receiver" | "worker", baseEnv: Record<string, string>): Promise<Running> {
  // Ports 0, read back from the log lines: a port picked free beforehand may be taken by a
  // parallel test before the process binds it.
  const child = spawn(process.execPath, [join(outDir, "dist/cli/main.js"), "start", "--role", role], {
    env: { PATH: process.env.PATH, ARCHIVE: "off", ...baseEnv, LOG_LEVEL: "info", ADMIN_PORT: "0", PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  // Ready = the admin port answers /readyz 200 (Redis reachable and writable).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${role} exited with ${child.exitCode}: ${stderr}`);
    const adminUrl = loggedUrl(stdout, "admin");
    const status = adminUrl ? await fetch(`${adminUrl}/readyz`).then((answer) => answer.status, () => 0) : 0;
    if (adminUrl && status === 200) {
      // Nothing else is read from stdout: keep draining it so the process never blocks on the pipe.
      return { role, child, adminUrl, publicUrl: role === "receiver" ? loggedUrl(stdout, "public") : undefined, stderr: () => stderr.slice(-2000) };
    }
    if (Date.now() > deadline) throw new Error(`${role} not ready within 60 s: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The sum of a counter's samples whose labels contain `labels`, from a process's /metrics. */
async function metricSum(process: Running, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${process.adminUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${name}{`) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

/** Waits until no job of the routes is waiting, active or delayed: no delivery is still to come. */
async function untilDrained(env: Record<string, string>, routes: string[]) {
  const store = await inspectStore(loadConfig(env), env.REDIS_URL);
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const counts = await Promise.all(routes.map((route) => store.queues.forRoute(route).getJobCounts("waiting", "active", "delayed", "prioritized")));
      if (counts.every((count) => Object.values(count).every((value) => value === 0))) return;
      if (Date.now() > deadline) throw new Error(`delivery jobs still pending: ${JSON.stringify(counts)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await store.close();
  }
}

/**
 * The pull beside the push, measured: `npx tsx bench/pull-bench.ts` (docs/benchmarks.md, "Pull").
 * One Redis, the emulator and the service in this process, a sink on loopback.
 * 1. Ingest: webhooks posted by 16 concurrent clients while the emulator's log holds
 *    events for the pull; each path's events per second into the store, in the same run.
 * 2. Lag from the tenant emitting to the route receiving, push only, then pull only
 *    (events paced at BENCH_PULL_RATE per second for BENCH_PULL_SECONDS).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { startService } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { startEmulator, type Emulator } from "../src/emulator/start-emulator.js";
import { startRedisServer } from "../src/redis/redis-server.js";
import { basicAuthorization } from "../test/helpers/credentials.js";

const count = Number(process.env.BENCH_PULL_EVENTS ?? 3000);
const rate = Number(process.env.BENCH_PULL_RATE ?? 50);
const seconds = Number(process.env.BENCH_PULL_SECONDS ?? 10);
const credentials = { username: "bench", password: "bench-password" };

async function main() {
  const dir = await mkdtemp(join(tmpdir(), "sk-pull-bench-"));
  const redis = await startRedisServer({ dir, appendOnly: false });
  const received: Array<{ id: string; at: number; origin: string }> = [];
  const sink = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ id: String(req.headers["webhook-id"]), at: Date.now(), origin: String(req.headers["x-streamkeeper-origin"]) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`;
  const load = loadavg()[0]!.toFixed(1);
  console.log(`machine: ${cpus().length} cores, load average ${load} at start`);
  try {
    console.log(JSON.stringify(await ingest(redis.url, sinkUrl)));
    console.log(JSON.stringify(await lag(redis.url, sinkUrl, received, "push")));
    console.log(JSON.stringify(await lag(redis.url, sinkUrl, received, "pull")));
    console.log(`load average ${loadavg()[0]!.toFixed(1)} at end`);
  } finally {
    sink.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function service(redisUrl: string, sinkUrl: string, emulator: Emulator, pull: boolean) {
  const config = loadConfig({
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `bench-${randomUUID()}`,
    PORT: "0",
    HOST: "127.0.0.1",
    ADMIN_PORT: "0",
    DATA_DIR: await mkdtemp(join(tmpdir(), "sk-pull-bench-data-")),
    WEBHOOK_USERNAME: credentials.username,
    WEBHOOK_PASSWORD: credentials.password,
    DOWNSTREAM_URL: sinkUrl,
    MGMT_API_BASE_URL: emulator.apiBaseUrl,
    MGMT_TOKEN_URL: emulator.tokenUrl,
    MGMT_CLIENT_ID: "emulator-client",
    MGMT_CLIENT_SECRET: "emulator-secret",
    RECONCILE_SWEEP_INTERVAL_SECONDS: "0",
    STREAM_WATCH_INTERVAL_SECONDS: "0",
    PULL: pull ? "on" : "off",
    LOG_LEVEL: "error",
  });
  return startService(config, createLogger("error"), "all");
}

async function metric(adminUrl: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text.split("\n").find((row) => row.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

async function emit(emulator: Emulator, type: string, n: number): Promise<void> {
  const response = await fetch(`${emulator.url}/emulator/events`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type, data: { object: { user_id: "auth0|bench" } }, count: n }) });
  if (response.status !== 202) throw new Error(`emit answered ${response.status}`);
}

/** Webhooks and the pull into one store at once: events per second of each. */
async function ingest(redisUrl: string, sinkUrl: string) {
  const emulator = await startEmulator({ eventsHeartbeatSeconds: 1 });
  const running = await service(redisUrl, sinkUrl, emulator, true);
  try {
    while (!(await fetch(`${emulator.url}/emulator/events-api`).then((r) => r.json() as Promise<{ open: number }>)).open) await new Promise((r) => setTimeout(r, 50));
    await emit(emulator, "user.created", count);
    const started = performance.now();
    const authorization = basicAuthorization(credentials.username, credentials.password);
    let next = 0;
    let webhookDoneAt = 0;
    const poster = async () => {
      while (next < count) {
        next++;
        const event = { id: `evt_${randomUUID().replaceAll("-", "").slice(0, 22)}`, source: "urn:bench", specversion: "1.0", type: "user.updated", time: new Date().toISOString(), data: { object: { user_id: "auth0|bench" } } };
        const answer = await fetch(`${running.publicUrl}/webhooks`, { method: "POST", headers: { authorization, "content-type": "application/json" }, body: JSON.stringify(event) });
        if (answer.status !== 202) throw new Error(`webhook answered ${answer.status}`);
      }
      webhookDoneAt = performance.now();
    };
    let pulledAt = 0;
    const watchPull = (async () => {
      while ((await metric(running.adminUrl, "streamkeeper_pull_events_total", 'result="stored"')) < count) await new Promise((r) => setTimeout(r, 100));
      pulledAt = performance.now();
    })();
    await Promise.all(Array.from({ length: 16 }, poster));
    await watchPull;
    return {
      scenario: "ingest side by side",
      events: count,
      webhookPerSecond: Math.round(count / ((webhookDoneAt - started) / 1000)),
      pulledPerSecond: Math.round(count / ((pulledAt - started) / 1000)),
    };
  } finally {
    await running.close();
    await emulator.close();
  }
}

/** Emit to route receipt, by one path only: a stream pushing to the service, or the pull with no stream. */
async function lag(redisUrl: string, sinkUrl: string, received: Array<{ id: string; at: number; origin: string }>, path: "push" | "pull") {
  const emulator = await startEmulator({ eventsHeartbeatSeconds: 15 });
  const running = await service(redisUrl, sinkUrl, emulator, path === "pull");
  received.length = 0;
  try {
    if (path === "push") {
      const answer = await fetch(`${emulator.url}/emulator/streams`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "bench", subscriptions: [{ event_type: "user.created" }], destination: { type: "webhook", configuration: { webhook_endpoint: `${running.publicUrl}/webhooks`, webhook_authorization: { method: "basic", ...credentials } } } }),
      });
      if (answer.status !== 201) throw new Error(`stream answered ${answer.status}`);
    } else {
      while (!(await fetch(`${emulator.url}/emulator/events-api`).then((r) => r.json() as Promise<{ open: number }>)).open) await new Promise((r) => setTimeout(r, 50));
    }
    const emittedAt = new Map<string, number>();
    const total = rate * seconds;
    const started = Date.now();
    for (let n = 0; n < total; n++) {
      const wait = started + (n * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const at = Date.now();
      const answer = await fetch(`${emulator.url}/emulator/events`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "user.created", data: { object: { user_id: `auth0|${n}` } } }) });
      emittedAt.set(((await answer.json()) as { id: string }).id, at);
    }
    const deadline = Date.now() + 60_000;
    while (received.length < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const lags = received.filter((row) => emittedAt.has(row.id)).map((row) => row.at - emittedAt.get(row.id)!).sort((a, b) => a - b);
    const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))];
    return { scenario: `lag ${path}`, events: total, received: lags.length, origins: [...new Set(received.map((row) => row.origin))], p50Ms: at(0.5), p99Ms: at(0.99), maxMs: lags.at(-1) };
  } finally {
    await running.close();
    await emulator.close();
  }
}

await main();

import { spawn, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { freePort } from "../../src/redis/redis-server.js";
import type { BenchSettings } from "../bench-settings.js";
import { startCountingProxy, type ProxyCounts } from "../lib/start-counting-proxy.js";
import { startServiceProcess } from "../lib/start-service-process.js";
import { adminHeaders } from "../../test/helpers/credentials.js";

export type ReconcileResults =
  | {
      status: "measured";
      ids: number;
      allowedRate: number;
      /** management API calls the reconcile made, as the emulator saw them (token requests excluded) */
      calls: number;
      /** from the first call to the last */
      seconds: number;
      callsPerSecond: number;
      /** callsPerSecond over the allowed rate */
      shareOfAllowed: number;
      /** RECONCILE_RATE_SHARE at its default: the part of the allowed rate the service may spend */
      rateShare: number;
      /** the sweep: the same failed deliveries, found and recovered with no ids given */
      sweep: SweepResults;
      /** 429 answers the emulator gave */
      rateLimited: number;
      /** ids whose outcome was a failure (not_found, no_payload, error: ...) */
      failures: number;
      outcomes: Record<string, number>;
      /** from submitting the ids to the last outcome printed */
      wallSeconds: number;
      apiStatuses: ProxyCounts["byStatus"];
    }
  | { status: "pending"; reason: string };

export interface SweepResults {
  /** failed deliveries the sweep recovered (stored for the routes) */
  recovered: number;
  /** from the service process ready to the last one recovered */
  seconds: number;
  /** management API calls it made (the stream list and every page of the failed-deliveries list) */
  calls: number;
  /** of which list-deliveries pages */
  listCalls: number;
  rateLimited: number;
}

/** RECONCILE_RATE_SHARE's default (config.ts): the bench runs the service at its default configuration. */
const defaultRateShare = 0.5;
const adminToken = "bench-admin-token";

export interface ReconcileContext {
  settings: BenchSettings;
  redis: Redis;
  redisUrl: string;
  dataDir: string;
  /** where recovered events are delivered */
  sinkUrl: string;
  cpuProfileDir?: string;
  log(message: string): void;
}

const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const clientId = "emulator-client";
const clientSecret = "emulator-secret";

/**
 * Reconcile: BENCH_RECONCILE_IDS deliveries fail at the emulator (their endpoint refuses
 * connections; retries 100 times faster than real), then `streamkeeper reconcile --file`
 * recovers them through the service's worker, with the emulator limited to
 * BENCH_RECONCILE_RATE API calls/s and the service at its default configuration: it
 * paces itself at RECONCILE_RATE_SHARE (0.5) of the limit the emulator advertises. Then
 * the sweep: a fresh Redis, a worker with PUBLIC_URL pointing at the stream, and no ids
 * given: how long and how many API calls until every failed delivery is recovered.
 * A counting proxy in front of the API measures the achieved call rate and the 429s.
 */
export async function runReconcile(context: ReconcileContext): Promise<ReconcileResults> {
  const { settings, log, redis } = context;
  const help = spawnSync(process.execPath, [cli, "reconcile", "--help"], { encoding: "utf8" });
  if (help.status !== 0) return { status: "pending", reason: "`streamkeeper reconcile` is not in this build yet" };

  const rate = settings.BENCH_RECONCILE_RATE;
  const emulator = await startEmulator({
    rateLimit: rate,
    timeScale: 0.01,
    // The run fails thousands of deliveries on purpose: keep the stream enabled.
    disableAfterConsecutiveFailures: Number.MAX_SAFE_INTEGER,
    disableAfterTotalFailures: Number.MAX_SAFE_INTEGER,
  });
  const proxy = await startCountingProxy(emulator.url, "/api/v2/");
  const tenantEnv = {
    MGMT_API_BASE_URL: `${proxy.url}/api/v2`,
    MGMT_TOKEN_URL: emulator.tokenUrl,
    MGMT_AUDIENCE: emulator.audience,
    MGMT_CLIENT_ID: clientId,
    MGMT_CLIENT_SECRET: clientSecret,
  };
  try {
    log(`reconcile: failing ${settings.BENCH_RECONCILE_IDS} deliveries at the emulator`);
    const { streamId, eventIds, deadPort } = await failDeliveries(emulator.url, settings.BENCH_RECONCILE_IDS);
    const idsFile = join(context.dataDir, "reconcile-ids.txt");
    await writeFile(idsFile, `${eventIds.join("\n")}\n`);

    await redis.flushall();
    const service = await startServiceProcess({
      role: "worker",
      redisUrl: context.redisUrl,
      queuePrefix: "bench-reconcile",
      dataDir: context.dataDir,
      cpuProfileDir: context.cpuProfileDir,
      env: {
        DOWNSTREAM_URL: `${context.sinkUrl}/deliver`,
        ...tenantEnv,
        // The sweep is the next measure: here only the ids given are reconciled.
        RECONCILE_SWEEP_INTERVAL_SECONDS: "0",
      },
    });
    let byId: Omit<Extract<ReconcileResults, { status: "measured" }>, "sweep">;
    try {
      log(`reconcile: ${eventIds.length} ids, tenant limit ${rate} calls/s, default share ${defaultRateShare} (streamkeeper reconcile --file)`);
      const before = proxy.counts();
      const started = performance.now();
      const outcomes = await reconcileFile(idsFile, streamId, service.env);
      const wallSeconds = (performance.now() - started) / 1000;
      const after = proxy.counts();
      const calls = after.calls - before.calls;
      const seconds = ((after.lastAt ?? 0) - (before.calls > 0 ? (before.lastAt ?? 0) : (after.firstAt ?? 0))) / 1000;
      const callsPerSecond = seconds > 0 ? calls / seconds : 0;
      const counted = Object.values(outcomes).reduce((sum, count) => sum + count, 0);
      const failures = Object.entries(outcomes)
        .filter(([outcome]) => outcome === "not_found" || outcome === "no_payload" || outcome.startsWith("error"))
        .reduce((sum, [, count]) => sum + count, 0);
      byId = {
        status: "measured",
        ids: eventIds.length,
        allowedRate: rate,
        calls,
        seconds: Math.round(seconds * 100) / 100,
        callsPerSecond: Math.round(callsPerSecond * 10) / 10,
        shareOfAllowed: Math.round((callsPerSecond / rate) * 1000) / 1000,
        rateShare: defaultRateShare,
        rateLimited: (after.byStatus["429"] ?? 0) - (before.byStatus["429"] ?? 0),
        failures: failures + (eventIds.length - counted),
        outcomes,
        wallSeconds: Math.round(wallSeconds * 100) / 100,
        apiStatuses: after.byStatus,
      };
    } finally {
      await service.stop();
    }
    const sweep = await measureSweep({ ...context, tenantEnv, deadPort, ids: eventIds.length, proxy });
    return { ...byId, sweep };
  } finally {
    await proxy.close();
    await emulator.close();
  }
}

/**
 * The same failed deliveries, this time with no ids given: a fresh Redis (so none is known),
 * a worker whose PUBLIC_URL is the stream's endpoint, and its first sweep. Done when
 * `GET /admin/sweep` counts every delivery recovered.
 */
async function measureSweep(context: ReconcileContext & { tenantEnv: Record<string, string>; deadPort: number; ids: number; proxy: Awaited<ReturnType<typeof startCountingProxy>> }): Promise<SweepResults> {
  const { redis, proxy, log } = context;
  await redis.flushall();
  const before = proxy.counts();
  const started = performance.now();
  const service = await startServiceProcess({
    role: "worker",
    redisUrl: context.redisUrl,
    queuePrefix: "bench-sweep",
    dataDir: context.dataDir,
    cpuProfileDir: context.cpuProfileDir,
    env: {
      DOWNSTREAM_URL: `${context.sinkUrl}/deliver`,
      ...context.tenantEnv,
      ADMIN_TOKEN: adminToken,
      PUBLIC_URL: `http://127.0.0.1:${context.deadPort}`,
      RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
    },
  });
  try {
    log(`reconcile: the sweep, ${context.ids} failed deliveries and no ids given`);
    const deadline = Date.now() + 600_000;
    for (;;) {
      const answer = await fetch(`${service.adminUrl}/admin/sweep`, { headers: adminHeaders(adminToken) });
      const { streams } = (await answer.json()) as { streams: Array<{ recovered: number }> };
      const recovered = streams.reduce((sum, stream) => sum + stream.recovered, 0);
      if (recovered >= context.ids) {
        const seconds = (performance.now() - started) / 1000;
        const after = proxy.counts();
        const listCalls = after.listCalls - before.listCalls;
        return {
          recovered,
          seconds: Math.round(seconds * 100) / 100,
          calls: after.calls - before.calls,
          listCalls,
          rateLimited: (after.byStatus["429"] ?? 0) - (before.byStatus["429"] ?? 0),
        };
      }
      if (Date.now() > deadline) throw new Error(`the sweep recovered ${recovered} of ${context.ids} within 600 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await service.stop();
  }
}

/** Emits `count` events to a stream whose endpoint refuses connections and waits until every delivery failed for good. */
export async function failDeliveries(emulatorUrl: string, count: number): Promise<{ streamId: string; eventIds: string[]; deadPort: number }> {
  const control = async (path: string, body?: unknown) => {
    const response = await fetch(`${emulatorUrl}/emulator${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`emulator ${path} answered ${response.status}: ${await response.text()}`);
    return response.json() as Promise<Record<string, unknown>>;
  };
  // A port nothing listens on: every attempt fails at once with ECONNREFUSED.
  const deadPort = await freePort();
  const stream = (await control("/streams", {
    name: "bench-reconcile",
    subscriptions: [{ event_type: "user.updated" }],
    destination: {
      type: "webhook",
      configuration: { webhook_endpoint: `http://127.0.0.1:${deadPort}/webhooks`, webhook_authorization: { method: "bearer", token: "unused" } },
    },
  })) as { id: string };
  const eventIds: string[] = [];
  for (let start = 0; start < count; start += 50) {
    const emitted = await Promise.all(
      Array.from({ length: Math.min(50, count - start) }, (_, index) =>
        control("/events", { type: "user.updated", data: { object: { user_id: `auth0|bench${start + index}`, email: `bench-${start + index}@example.com` } } }),
      ),
    );
    for (const event of emitted) eventIds.push(event.id as string);
  }
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { deliveries } = (await control(`/deliveries?stream_id=${stream.id}`)) as { deliveries: Array<{ status: string }> };
    const failed = deliveries.filter((delivery) => delivery.status === "failed").length;
    if (failed >= count) break;
    if (Date.now() > deadline) throw new Error(`only ${failed} of ${count} deliveries failed at the emulator within 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return { streamId: stream.id, eventIds, deadPort };
}

/** Runs `streamkeeper reconcile --file <ids> --stream <id> --json` and counts the outcomes it prints. */
export async function reconcileFile(idsFile: string, streamId: string, env: Record<string, string | undefined>): Promise<Record<string, number>> {
  const child = spawn(process.execPath, [cli, "reconcile", "--file", idsFile, "--stream", streamId, "--json"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let errors = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (errors += chunk));
  const code = await new Promise<number | null>((ok) => child.once("exit", ok));
  const outcomes: Record<string, number> = {};
  for (const line of output.split("\n")) {
    if (!line.trim()) continue;
    const outcome = String((JSON.parse(line) as { outcome: string }).outcome).replace(/^error: .*/, "error");
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }
  if (code !== 0 && code !== 1) throw new Error(`streamkeeper reconcile exited with code ${code}: ${errors.slice(-500)}`);
  return outcomes;
}

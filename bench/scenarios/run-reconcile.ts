import { spawn, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { freePort } from "../../src/queue/redis-server.js";
import type { BenchSettings } from "../bench-settings.js";
import { startCountingProxy, type ProxyCounts } from "../lib/start-counting-proxy.js";
import { startServiceProcess } from "../lib/start-service-process.js";

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
 * BENCH_RECONCILE_RATE API calls/s and RECONCILE_RATE_PER_SECOND set to the same.
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
  try {
    log(`reconcile: failing ${settings.BENCH_RECONCILE_IDS} deliveries at the emulator`);
    const { streamId, eventIds } = await failDeliveries(emulator.url, settings.BENCH_RECONCILE_IDS);
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
        RECONCILE_RATE_PER_SECOND: String(rate),
        MGMT_API_BASE_URL: `${proxy.url}/api/v2`,
        MGMT_TOKEN_URL: emulator.tokenUrl,
        MGMT_AUDIENCE: emulator.audience,
        MGMT_CLIENT_ID: clientId,
        MGMT_CLIENT_SECRET: clientSecret,
      },
    });
    try {
      log(`reconcile: ${eventIds.length} ids at ${rate} calls/s (streamkeeper reconcile --file)`);
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
      return {
        status: "measured",
        ids: eventIds.length,
        allowedRate: rate,
        calls,
        seconds: Math.round(seconds * 100) / 100,
        callsPerSecond: Math.round(callsPerSecond * 10) / 10,
        shareOfAllowed: Math.round((callsPerSecond / rate) * 1000) / 1000,
        rateLimited: (after.byStatus["429"] ?? 0) - (before.byStatus["429"] ?? 0),
        failures: failures + (eventIds.length - counted),
        outcomes,
        wallSeconds: Math.round(wallSeconds * 100) / 100,
        apiStatuses: after.byStatus,
      };
    } finally {
      await service.stop();
    }
  } finally {
    await proxy.close();
    await emulator.close();
  }
}

/** Emits `count` events to a stream whose endpoint refuses connections and waits until every delivery failed for good. */
async function failDeliveries(emulatorUrl: string, count: number): Promise<{ streamId: string; eventIds: string[] }> {
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
  return { streamId: stream.id, eventIds };
}

/** Runs `streamkeeper reconcile --file <ids> --stream <id> --json` and counts the outcomes it prints. */
async function reconcileFile(idsFile: string, streamId: string, env: Record<string, string | undefined>): Promise<Record<string, number>> {
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

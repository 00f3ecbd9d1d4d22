import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { RefillMode } from "../../src/emulator/allowance.js";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import type { BenchSettings } from "../bench-settings.js";
import { startServiceProcess } from "../lib/start-service-process.js";
import { failDeliveries, reconcileFile } from "./run-reconcile.js";

/** The limiter shapes of docs/operating.md, "How the recovery pace works". */
export type PaceShape = "bucket" | "window" | "quota" | "other client";

export interface PaceShapeResult {
  shape: PaceShape;
  ids: number;
  /** what the service may spend: the share of the bucket, or the quota when tighter (calls/s) */
  target: number;
  /** calls/s after the run's first 5 s, from the emulator's own per-second counts */
  callsPerSecond: number;
  shareOfTarget: number;
  /** from the first accepted call to the last */
  seconds: number;
  calls: number;
  rateLimited: number;
  failures: number;
  /** the other client's calls/s meanwhile (the "other client" shape) */
  otherPerSecond?: number;
  /** the service's own account at the end: its pace and the limit it believed bound, and how often it cut the pace */
  pace: { perSecond?: number; limit?: string; cuts: number };
}

export type ReconcilePaceResults = { status: "measured"; limit: number; share: number; shapes: PaceShapeResult[] } | { status: "pending"; reason: string };

export interface ReconcilePaceContext {
  settings: BenchSettings;
  redis: Redis;
  redisUrl: string;
  dataDir: string;
  sinkUrl: string;
  log(message: string): void;
}

const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
/** RECONCILE_RATE_SHARE's default (config.ts). */
const share = 0.5;

/**
 * Reconcile pace: for each limiter shape (a bucket that refills continuously, a window that
 * refills at the end of each second, a per-client quota tighter than our share, another
 * client spending the other half of the bucket), BENCH_PACE_IDS failed deliveries recovered
 * by `streamkeeper reconcile --file` through a `--role worker` process at its default
 * configuration, against an emulator allowing BENCH_PACE_RATE calls/s. Calls/s are the
 * emulator's own per-second counts after the run's first 5 s, against the target.
 */
export async function runReconcilePace(context: ReconcilePaceContext): Promise<ReconcilePaceResults> {
  const help = spawnSync(process.execPath, [cli, "reconcile", "--help"], { encoding: "utf8" });
  if (help.status !== 0) return { status: "pending", reason: "`streamkeeper reconcile` is not in this build yet" };
  const limit = context.settings.BENCH_PACE_RATE;
  const shapes: PaceShapeResult[] = [];
  for (const shape of ["bucket", "window", "quota", "other client"] as const) shapes.push(await runShape(context, shape, limit));
  return { status: "measured", limit, share, shapes };
}

async function runShape(context: ReconcilePaceContext, shape: PaceShape, limit: number): Promise<PaceShapeResult> {
  const { settings, log, redis } = context;
  const mode: RefillMode = shape === "window" ? "window" : "bucket";
  const emulator = await startEmulator({ rateLimit: limit, rateLimitMode: mode, timeScale: 0.01, disableAfterConsecutiveFailures: Number.MAX_SAFE_INTEGER, disableAfterTotalFailures: Number.MAX_SAFE_INTEGER });
  let other: { stop(): Promise<void> } | undefined;
  try {
    log(`reconcile pace, ${shape}: failing ${settings.BENCH_PACE_IDS} deliveries at the emulator`);
    const { streamId, eventIds } = await failDeliveries(emulator.url, settings.BENCH_PACE_IDS);
    const idsFile = join(context.dataDir, "pace-ids.txt");
    await writeFile(idsFile, `${eventIds.join("\n")}\n`);
    let target = limit * share;
    if (shape === "quota") {
      // Tighter than our share of the bucket: the quota binds.
      const quota = Math.max(1, Math.floor(limit * share * 0.8));
      await control(emulator, "PUT", "/clients/emulator-client/quota", { requests: quota, seconds: 1 });
      target = quota;
    }
    if (shape === "other client") {
      await control(emulator, "POST", "/clients", { client_id: "other-app", client_secret: "other-secret", scopes: ["read:event_streams"] });
      other = spendFromTheBucket(emulator, await token(emulator, "other-app", "other-secret"), limit * (1 - share));
    }
    await redis.flushall();
    const service = await startServiceProcess({
      role: "worker",
      redisUrl: context.redisUrl,
      queuePrefix: "bench-pace",
      dataDir: context.dataDir,
      env: {
        DOWNSTREAM_URL: `${context.sinkUrl}/deliver`,
        MGMT_API_BASE_URL: emulator.apiBaseUrl,
        MGMT_TOKEN_URL: emulator.tokenUrl,
        MGMT_AUDIENCE: emulator.audience,
        MGMT_CLIENT_ID: "emulator-client",
        MGMT_CLIENT_SECRET: "emulator-secret",
        RECONCILE_SWEEP_INTERVAL_SECONDS: "0",
      },
    });
    let outcomes: Record<string, number>;
    let pace: PaceShapeResult["pace"];
    try {
      log(`reconcile pace, ${shape}: ${eventIds.length} ids, tenant limit ${limit} calls/s, target ${target} calls/s`);
      outcomes = await reconcileFile(idsFile, streamId, service.env);
      pace = await paceOf(service.adminUrl);
    } finally {
      await service.stop();
    }
    await other?.stop();
    const ours = await figures(emulator, "client:emulator-client");
    const theirs = other ? await figures(emulator, "client:other-app") : undefined;
    const recovered = outcomes.recovered ?? 0;
    return {
      shape,
      ids: eventIds.length,
      target,
      callsPerSecond: round(ours.perSecond, 1),
      shareOfTarget: round(ours.perSecond / target, 3),
      seconds: ours.spanSeconds,
      calls: ours.accepted,
      rateLimited: ours.refused,
      failures: eventIds.length - recovered,
      otherPerSecond: theirs && round(theirs.perSecond, 1),
      pace,
    };
  } finally {
    await other?.stop();
    await emulator.close();
  }
}

/** A caller's calls as the emulator counted them: accepted per second after the first 5 s (the last, partial second left out). */
async function figures(emulator: Emulator, caller: string) {
  const { callers } = (await control(emulator, "GET", "/calls")) as { callers: Array<{ caller: string; accepted: number; refused: number; acceptedPerSecond: Record<string, number> }> };
  const entry = callers.find((candidate) => candidate.caller === caller);
  if (!entry) return { accepted: 0, refused: 0, spanSeconds: 0, perSecond: 0 };
  const seconds = Object.keys(entry.acceptedPerSecond).map(Number);
  const first = Math.min(...seconds);
  const last = Math.max(...seconds);
  let steady = 0;
  for (let second = first + 5; second < last; second++) steady += entry.acceptedPerSecond[String(second)] ?? 0;
  return { accepted: entry.accepted, refused: entry.refused, spanSeconds: last - first + 1, perSecond: last - first - 5 > 0 ? steady / (last - first - 5) : 0 };
}

/** `streamkeeper_mgmt_api_pace_per_second{limit}` and the cuts, from the service's /metrics. */
async function paceOf(adminUrl: string): Promise<PaceShapeResult["pace"]> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const gauge = /^streamkeeper_mgmt_api_pace_per_second\{limit="(\w+)"\} ([\d.e+-]+)$/m.exec(text);
  const cuts = [...text.matchAll(/^streamkeeper_mgmt_api_pace_cuts_total\{reason="\w+"\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
  return { perSecond: gauge ? round(Number(gauge[2]), 1) : undefined, limit: gauge?.[1], cuts };
}

async function control(emulator: Emulator, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${emulator.url}/emulator${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) throw new Error(`emulator ${method} ${path} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

async function token(emulator: Emulator, clientId: string, clientSecret: string): Promise<string> {
  const response = await fetch(emulator.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret, audience: emulator.audience }),
  });
  if (!response.ok) throw new Error(`token for ${clientId} answered ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** Another application of the tenant: `perSecond` calls a second from its own client (a late timer catches up by at most 10 calls). */
function spendFromTheBucket(emulator: Emulator, bearer: string, perSecond: number): { stop(): Promise<void> } {
  const started = performance.now();
  let sent = 0;
  let stopped: Promise<void> | undefined;
  const inFlight = new Set<Promise<unknown>>();
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    sent = Math.max(sent, due - 10);
    while (sent < due && inFlight.size < 20) {
      sent++;
      const request = fetch(`${emulator.apiBaseUrl}/event-streams`, { headers: { authorization: `Bearer ${bearer}` } })
        .then((response) => response.text())
        .catch(() => undefined);
      inFlight.add(request);
      void request.finally(() => inFlight.delete(request));
    }
  }, 5);
  return {
    stop: () => (stopped ??= (clearInterval(timer), Promise.all(inFlight).then(() => undefined))),
  };
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { RefillMode } from "../../src/emulator/allowance.js";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import type { BenchSettings } from "../bench-settings.js";
import { clientToken, paceFigures, spendFromTheBucket } from "../../test/helpers/tenant-pace.js";
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
      other = spendFromTheBucket(emulator, await clientToken(emulator, "other-app", "other-secret"), limit * (1 - share));
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
    const ours = await paceFigures(emulator, "client:emulator-client");
    const theirs = other ? await paceFigures(emulator, "client:other-app") : undefined;
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

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

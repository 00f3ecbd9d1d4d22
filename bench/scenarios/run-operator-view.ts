import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { freshnessHourKey, freshnessMinuteKey } from "../../src/freshness/freshness-keys.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { percentile } from "../lib/percentile.js";
import { startServiceProcess } from "../lib/start-service-process.js";
import { adminHeaders } from "../../test/helpers/credentials.js";

export interface RequestFigures {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export type OperatorViewResults =
  | {
      status: "measured";
      routes: number;
      /** lag-bucket fields per minute and per hour hash of the freshness sketch (a full day of history) */
      sketchFieldsPerKey: number;
      /** the first GET /admin/overview, answered while the service delivers 10,000 events to the 100 routes (not part of the target) */
      duringDeliveriesMs: number;
      overview: RequestFigures;
      /** the same, with 5 pages polling at once, each every 500 ms */
      overviewConcurrent: RequestFigures;
      /** GET /admin/, operator-view.js, operator-view.css */
      pageFiles: RequestFigures;
      overviewBytes: number;
    }
  | { status: "pending"; reason: string };

export interface OperatorViewContext {
  redis: Redis;
  redisUrl: string;
  dataDir: string;
  sinkUrl: string;
  log(message: string): void;
}

const routes = 100;
const adminToken = "bench-admin-token";
/** Lag buckets filled per route in every minute and hour of the sketch: a spread of lags, as a day of traffic gives. */
const bucketsPerRoute = 30;

/**
 * What opening the operator view costs against 100 routes (docs/benchmarks.md): a
 * `--role all` service with 100 routes, a full day of freshness history written into the
 * sketch (6 minute and 25 hour hashes, 30 lag buckets per route in each), 100 events
 * delivered to every route (the first request is timed while they run), then, once they
 * are done, the page's requests timed one after another, and with five pages polling at
 * once every 500 ms each (the page polls every 5 s). The archive's search is not part of it (its own bench).
 */
export async function runOperatorView(context: OperatorViewContext): Promise<OperatorViewResults> {
  const { redis, log } = context;
  log(`operator view: ${routes} routes`);
  await redis.flushall();
  const queuePrefix = "bench-operator-view";
  const routesFile = join(context.dataDir, "bench-operator-view-routes.json");
  await fillSketch(redis, queuePrefix);
  const routeList: Route[] = Array.from({ length: routes }, (_, index) => ({ name: `route-${String(index).padStart(3, "0")}`, match: ["*"], url: `${context.sinkUrl}/deliver`, headers: {}, timeoutMs: 10_000, concurrency: 5, freshnessSeconds: 5 }));
  const queues = createDeliveryQueues(redis, queuePrefix, routeList, { ageSeconds: 3600, count: 1000 });
  const store = createEventStore({ ledger: createEventLedger(redis, queuePrefix, 3600), fanOut: createFanOut(queues), routesFor: routesMatching(routeList) });
  await writeFile(routesFile, JSON.stringify(routeList.map(({ headers: _headers, ...route }) => route)));
  const service = await startServiceProcess({ role: "all", redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env: { ROUTES_FILE: routesFile, ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn" } });
  try {
    // Stored as the receiver stores them (straight into Redis: the receiver's fail-fast
    // writes to 100 queues time out on a machine this loaded), delivered by the service.
    const now = new Date().toISOString();
    for (let index = 0; index < 100; index++) {
      await store.store(
        { id: `evt_${randomBytes(11).toString("hex")}`, source: "urn:auth0:bench", specversion: "1.0", type: "user.updated", time: now, data: { object: { user_id: `auth0|${index}` } } },
        { origin: "webhook" },
      );
    }
    const headers = adminHeaders(adminToken);
    const timed = async (path: string) => {
      const started = performance.now();
      const answer = await fetch(`${service.adminUrl}${path}`, { headers });
      const body = await answer.text();
      if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}: ${body.slice(0, 200)}`);
      return { ms: performance.now() - started, bytes: body.length };
    };
    const cold = await timed("/admin/overview");
    // Measured once the 10,000 deliveries are done: opening the page, not the delivery work beside it.
    const deadline = Date.now() + 180_000;
    for (;;) {
      const seen = (await (await fetch(`${service.adminUrl}/admin/overview`, { headers })).json()) as { routes: Array<{ backlog: number | null }> };
      if (seen.routes.every((route) => route.backlog === 0)) break;
      if (Date.now() > deadline) return { status: "pending", reason: "the 10,000 deliveries were not done within 180 s" };
      await new Promise((ok) => setTimeout(ok, 500));
    }
    const sequential: number[] = [];
    let bytes = 0;
    for (let index = 0; index < 200; index++) {
      const { ms, bytes: size } = await timed("/admin/overview");
      sequential.push(ms);
      bytes = size;
    }
    const concurrent: number[] = [];
    await Promise.all(
      Array.from({ length: 5 }, async () => {
        // Each page polls every 500 ms (ten times the page's own pace), offset from the others.
        await new Promise((ok) => setTimeout(ok, Math.random() * 500));
        for (let index = 0; index < 40; index++) {
          concurrent.push((await timed("/admin/overview")).ms);
          await new Promise((ok) => setTimeout(ok, 500));
        }
      }),
    );
    const files: number[] = [];
    for (let index = 0; index < 50; index++) {
      for (const path of ["/admin/", "/admin/operator-view.js", "/admin/operator-view.css"]) files.push((await timed(path)).ms);
    }
    return {
      status: "measured",
      routes,
      sketchFieldsPerKey: routes * (bucketsPerRoute + 3),
      duringDeliveriesMs: round(cold.ms),
      overview: figures(sequential),
      overviewConcurrent: figures(concurrent),
      pageFiles: figures(files),
      overviewBytes: bytes,
    };
  } catch (error) {
    return { status: "pending", reason: (error as Error).message };
  } finally {
    await service.stop();
    await queues.close();
  }
}

/** A full day of freshness history for every route, as the workers would have written it. */
async function fillSketch(redis: Redis, queuePrefix: string) {
  const minute = Math.floor(Date.now() / 60_000);
  const hour = Math.floor(minute / 60);
  const fields: Record<string, number> = {};
  for (let index = 0; index < routes; index++) {
    const route = `route-${String(index).padStart(3, "0")}`;
    for (let bucket = 20; bucket < 20 + bucketsPerRoute; bucket++) fields[`${route}|b${bucket}`] = 1 + (bucket % 7);
    Object.assign(fields, { [`${route}|d`]: 200, [`${route}|m`]: 1, [`${route}|s`]: 2 });
  }
  const pipeline = redis.pipeline();
  for (let back = 0; back < 6; back++) pipeline.hset(freshnessMinuteKey(queuePrefix, minute - back), fields).pexpire(freshnessMinuteKey(queuePrefix, minute - back), 900_000);
  for (let back = 0; back < 25; back++) pipeline.hset(freshnessHourKey(queuePrefix, hour - back), fields).pexpire(freshnessHourKey(queuePrefix, hour - back), 93_600_000);
  await pipeline.exec();
}

function figures(values: number[]): RequestFigures {
  return { requests: values.length, p50Ms: round(percentile(values, 50)!), p99Ms: round(percentile(values, 99)!), maxMs: round(Math.max(...values)) };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

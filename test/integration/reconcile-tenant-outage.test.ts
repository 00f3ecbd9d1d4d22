import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createReconcileQueue, type ReconcileQueue } from "../../src/reconcile/create-reconcile-queue.js";
import { createReconcileWorker, type ReconcileWorker } from "../../src/reconcile/create-reconcile-worker.js";
import { createTenantClient } from "../../src/tenant/create-tenant-client.js";
import { tenantId } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { until } from "../helpers/until.js";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { control, createStream } from "./emulator-test-kit.js";

/**
 * README "Reconcile": a tenant outage (5xx after the client's own retries) sends the job
 * back to its queue with backoff doubling to a ceiling, for RECONCILE_RETRY_FOR_SECONDS,
 * rather than ending it (scaled here: 200 ms doubling to 800 ms, for 4 s). The tenant here is a
 * real HTTP server that hands out tokens and answers every API call 503; the client makes
 * no retries of its own, so each delivery-history request the tenant sees is one attempt.
 */
describe("reconcile during a tenant outage", () => {
  const redisUrl = inject("redisUrl");
  const queuePrefix = `outage-${randomUUID().slice(0, 8)}`;
  const redis = createRedis(redisUrl, "worker");
  let tenant: SinkServer;
  let queue: ReconcileQueue;
  let worker: ReconcileWorker;
  const historyCalls = () => tenant.requests.filter((request) => request.url.includes("/deliveries"));

  beforeAll(async () => {
    await untilReady(redis);
    tenant = await startSinkServer((request) =>
      request.url.startsWith("/oauth/token")
        ? { headers: { "content-type": "application/json" }, body: JSON.stringify({ access_token: "outage-token", expires_in: 3600, token_type: "Bearer" }) }
        : { status: 503, headers: { "content-type": "application/json" }, body: JSON.stringify({ statusCode: 503, error: "Service Unavailable", message: "down for the test" }) },
    );
    const client = createTenantClient({
      apiBaseUrl: `${tenant.url}api/v2`,
      tokenUrl: `${tenant.url}oauth/token`,
      audience: `${tenant.url}api/v2/`,
      clientId: "outage-client",
      clientSecret: "outage-secret",
      maxRetries: 0,
    });
    const ledger = createEventLedger(redis, queuePrefix, 600);
    const store = createEventStore({ ledger, fanOut: async () => {}, routesFor: () => [] });
    queue = createReconcileQueue(redis, queuePrefix);
    worker = createReconcileWorker({
      env: { QUEUE_PREFIX: queuePrefix, SHUTDOWN_TIMEOUT_MS: 2000, DEFAULT_STREAM_ID: undefined, LOG_REPEAT_INTERVAL_SECONDS: 60, RECONCILE_RATE_SHARE: 1, RECONCILE_RATE_PER_SECOND: undefined, RECONCILE_RETRY_FOR_SECONDS: 4 },
      retryBaseMs: 200,
      retryMaxMs: 800,
      tenant: { client },
      connection: createRedis(redisUrl, "worker"),
      ledger,
      store,
      logger: createLogger("silent"),
    });
  });
  afterAll(async () => {
    await worker?.close();
    await queue?.close();
    await tenant?.close();
    await closeRedis(redis);
  });

  it("when the tenant answers 5xx to every attempt, then the job is tried again and again, each wait doubling up to the ceiling, and ends as an error outcome only once RECONCILE_RETRY_FOR_SECONDS has passed", { timeout: 90_000 }, async () => {
    const [enqueued] = await queue.enqueue([tenantId("evt")], { streamId: tenantId("est") });
    const jobId = enqueued!.jobId;
    // Told while it waits: the attempts so far and the tenant's answer.
    await expect.poll(async () => (await queue.outcomeOf(jobId))?.retrying, { timeout: 60_000 }).toMatchObject({ attempts: 1, reason: expect.stringContaining("503") });
    // Done either way (completed is an outcome without retries): then it must be the failure.
    await expect.poll(async () => ["completed", "failed"].includes((await queue.outcomeOf(jobId))?.state ?? ""), { timeout: 60_000 }).toBe(true);
    expect(await queue.outcomeOf(jobId)).toMatchObject({ state: "failed" });

    const calls = historyCalls();
    expect(calls.every((call) => call.status === 503)).toBe(true);
    // 200, 400, 800, 800, ... ms less up to a fifth: at least 6 attempts within 4 s.
    expect(calls.length).toBeGreaterThanOrEqual(6);
    // Backoff: BullMQ never runs a delayed job early, so each gap is at least the wait.
    // Lower bounds only: a loaded machine makes gaps longer, never shorter.
    const gaps = calls.slice(1).map((call, index) => call.receivedAt - calls[index]!.receivedAt);
    gaps.forEach((gap, index) => expect(gap).toBeGreaterThanOrEqual(0.8 * Math.min(800, 200 * 2 ** index) - 50));
    // Given up only past the window, counted from when the job was queued.
    expect(calls.at(-1)!.receivedAt - calls[0]!.receivedAt).toBeGreaterThanOrEqual(4000 - 800);
    const outcome = (await queue.outcomeOf(jobId))?.result?.outcome;
    expect(outcome).toMatch(/^error: the reconcile job failed after \d+ attempts over \d+ s \(.*503.*\); reconcile this id again once that is fixed \(RECONCILE_RETRY_FOR_SECONDS/);
  });
});

/**
 * The same with the emulator as the tenant: 100 ids reconciled while its management API
 * answers 503 (an hour's outage, scaled: each job's waits 100 ms doubling to 1 s), kept down
 * until every job has failed more attempts than the old limit of 5. Once it is back, every id
 * is recovered, with no one starting anything again.
 */
describe("reconcile outlasting a tenant outage", () => {
  const redisUrl = inject("redisUrl");
  const queuePrefix = `outlast-${randomUUID().slice(0, 8)}`;
  const redis = createRedis(redisUrl, "worker");
  let emulator: Emulator;
  let refusing: SinkServer;
  let queue: ReconcileQueue;
  let worker: ReconcileWorker;

  beforeAll(async () => {
    await untilReady(redis);
    emulator = await startEmulator({ timeScale: 0.01 });
    refusing = await startSinkServer(() => ({ status: 500 }));
    const client = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret", maxRetries: 0 });
    const ledger = createEventLedger(redis, queuePrefix, 600);
    const store = createEventStore({ ledger, fanOut: async () => {}, routesFor: () => [] });
    queue = createReconcileQueue(redis, queuePrefix);
    worker = createReconcileWorker({
      env: { QUEUE_PREFIX: queuePrefix, SHUTDOWN_TIMEOUT_MS: 2000, DEFAULT_STREAM_ID: undefined, LOG_REPEAT_INTERVAL_SECONDS: 60, RECONCILE_RATE_SHARE: 1, RECONCILE_RATE_PER_SECOND: undefined, RECONCILE_RETRY_FOR_SECONDS: 3600 },
      tenant: { client },
      connection: createRedis(redisUrl, "worker"),
      ledger,
      store,
      logger: createLogger("silent"),
      retryBaseMs: 100,
      retryMaxMs: 1000,
    });
  });
  afterAll(async () => {
    await worker?.close();
    await queue?.close();
    await refusing?.close();
    await emulator?.close();
    await closeRedis(redis);
  });

  it("when the tenant's API answers 503 for longer than 5 attempts of every job during a reconcile of 100 ids, then once it is back all 100 are recovered", { timeout: 120_000 }, async () => {
    const streamId = await createStream(emulator, `${refusing.url}hook`);
    const { ids } = await control<{ ids: string[] }>(emulator, "/events", { type: "user.created", data: { object: { user_id: "auth0|outage" } }, count: 100 });
    await until("the tenant gave up on every delivery", async () => (await control<{ deliveries: Array<{ status: string }> }>(emulator, `/deliveries?stream_id=${streamId}`)).deliveries.filter((delivery) => delivery.status === "failed").length === 100);
    await setApiDown(emulator, 503);
    const jobs = await queue.enqueue(ids, { streamId });
    let seen: unknown;
    await until("every job failed more than 5 attempts", async () => {
      const outcomes = await Promise.all(jobs.map((job) => queue.outcomeOf(job.jobId)));
      seen = outcomes[0];
      return outcomes.every((outcome) => (outcome?.retrying?.attempts ?? 0) > 5);
    }, { withinMs: 100_000, detail: () => JSON.stringify(seen) });
    await setApiDown(emulator, null);
    const outcomes = await until("every job done", async () => {
      const all = await Promise.all(jobs.map((job) => queue.outcomeOf(job.jobId)));
      return all.every((outcome) => outcome?.result) && all.map((outcome) => outcome!.result!.outcome);
    });
    expect(outcomes).toEqual(new Array(100).fill("recovered"));
  });
});

async function setApiDown(emulator: Emulator, status: number | null): Promise<void> {
  const answer = await fetch(`${emulator.url}/emulator/api`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ down_status: status }) });
  expect(answer.status).toBe(200);
}

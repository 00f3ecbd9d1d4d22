import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createReconcileQueue, type ReconcileQueue } from "../../src/reconcile/create-reconcile-queue.js";
import { createReconcileWorker, type ReconcileWorker } from "../../src/reconcile/create-reconcile-worker.js";
import { createTenantClient } from "../../src/tenant/create-tenant-client.js";
import { tenantId } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

/**
 * README "Reconcile": a tenant outage (5xx after the client's own retries) sends the job
 * back to its queue with backoff, 5 attempts, rather than ending it. The tenant here is a
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
      env: { QUEUE_PREFIX: queuePrefix, SHUTDOWN_TIMEOUT_MS: 2000, DEFAULT_STREAM_ID: undefined, LOG_REPEAT_INTERVAL_SECONDS: 60, RECONCILE_RATE_SHARE: 1, RECONCILE_RATE_PER_SECOND: undefined },
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

  it("when the tenant answers 5xx to every attempt, then the job is tried 5 times, each after a longer wait than the last, and only then ends as an error outcome", { timeout: 90_000 }, async () => {
    const [enqueued] = await queue.enqueue([tenantId("evt")], { streamId: tenantId("est") });
    const jobId = enqueued!.jobId;
    // Done either way (completed is an outcome without retries): then it must be the failure.
    await expect.poll(async () => ["completed", "failed"].includes((await queue.outcomeOf(jobId))?.state ?? ""), { timeout: 60_000 }).toBe(true);
    expect(await queue.outcomeOf(jobId)).toMatchObject({ state: "failed" });

    const calls = historyCalls();
    expect(calls).toHaveLength(5);
    expect(calls.every((call) => call.status === 503)).toBe(true);
    // Backoff: BullMQ never runs a delayed job early, so each gap is at least the backoff
    // (1 s doubling). Lower bounds only: a loaded machine makes gaps longer, never shorter.
    const gaps = calls.slice(1).map((call, index) => call.receivedAt - calls[index]!.receivedAt);
    gaps.forEach((gap, index) => expect(gap).toBeGreaterThanOrEqual(1000 * 2 ** index - 50));
    const outcome = (await queue.outcomeOf(jobId))?.result?.outcome;
    expect(outcome).toMatch(/^error: the reconcile job failed after 5 attempts/);
  });
});

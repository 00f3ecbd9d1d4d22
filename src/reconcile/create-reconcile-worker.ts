import { Worker, type Telemetry } from "bullmq";
import { type Env, tenantSettings } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { createRedisErrorLog } from "../redis/redis-error-log.js";
import { reconcileTotal } from "../metrics/registry.js";
import type { EventLedger } from "../queue/event-ledger.js";
import type { EventStore } from "../queue/event-store.js";
import { reconcileQueueBullPrefix, reconcileQueueName } from "../queue/queue-names.js";
import type { RedisClient } from "../redis/redis-connection.js";
import { TenantRateLimitError } from "../tenant/tenant-api-error.js";
import { createReconciler, type ReconcilerDeps } from "./create-reconciler.js";
import type { PacedTenant } from "../pace/create-paced-tenant.js";
import { reconcileBackoff } from "./reconcile-backoff.js";
import { createStreamIdCache } from "./create-stream-id-cache.js";
import { outcomeLabel, type ReconcileJobData, type ReconcileResult } from "./reconcile-job.js";
import { closeWorkers } from "../shutdown/close-workers.js";
import { createInFlight } from "../shutdown/in-flight.js";

export interface ReconcileWorkerOptions {
  env: Pick<Env, "QUEUE_PREFIX" | "SHUTDOWN_TIMEOUT_MS" | "DEFAULT_STREAM_ID" | "LOG_REPEAT_INTERVAL_SECONDS" | "RECONCILE_RATE_SHARE" | "RECONCILE_RATE_PER_SECOND" | "RECONCILE_RETRY_FOR_SECONDS">;
  /** The process's one paced tenant client (create-paced-tenant.ts), or why there is none. */
  tenant: PacedTenant;
  /** A `worker` connection (`maxRetriesPerRequest: null`); the caller owns it and closes it after `close()`. */
  connection: RedisClient;
  ledger: EventLedger;
  store: EventStore;
  logger: Logger;
  /** How long the stream list is reused for ids that name no stream. @defaultValue 60000 */
  streamCacheMs?: number;
  /** BullMQ telemetry, when tracing is on. */
  telemetry?: Telemetry;
  /** Who answers, in an outcome that names the process: "the service (role all, pid 42 on host)". @defaultValue "this process" */
  serviceName?: string;
  /** The first wait before a failed job's next attempt (doubling to `retryMaxMs`). @defaultValue 1000 */
  retryBaseMs?: number;
  /** The longest wait between a failed job's attempts. @defaultValue 60000 */
  retryMaxMs?: number;
  /** Work the reconcile queue under this BullMQ prefix instead of its own: what another key layout left there is drained (upgrade/). */
  drainPrefix?: string;
}

export interface ReconcileWorker {
  /** Stops taking jobs; waits for those in flight at most SHUTDOWN_TIMEOUT_MS (a job cut short is taken up again: reconciling is idempotent). */
  close(): Promise<void>;
  /** Ends that wait now (a second signal): jobs still running are taken up again once their lock expires. */
  hurry(): void;
}

/**
 * Works through the `reconcile` queue: each job is one event id, its return value the
 * outcome. Tenant calls go through the shared pace of the paced tenant client
 * (create-paced-tenant.ts); a 429 that outlasts the client's retries pauses the whole
 * queue until the tenant's reset and puts the job back without spending an attempt.
 */
export function createReconcileWorker(options: ReconcileWorkerOptions): ReconcileWorker {
  const { env, logger, connection } = options;
  const prefix = options.drainPrefix ?? reconcileQueueBullPrefix(env.QUEUE_PREFIX);
  // An outage raises these on every reconnect attempt: a line per interval with the count.
  const logRedisError = createRedisErrorLog(logger, "reconcile: Redis error; reconnecting", env.LOG_REPEAT_INTERVAL_SECONDS * 1000);

  const reconciler = createReconciler({
    ledger: options.ledger,
    store: options.store,
    tenant: reconcileTenantOf(options.tenant, options),
    defaultStreamId: env.DEFAULT_STREAM_ID,
  });

  const inFlight = createInFlight();
  const worker: Worker<ReconcileJobData, ReconcileResult> = new Worker<ReconcileJobData, ReconcileResult>(
    reconcileQueueName,
    inFlight.track(async (job) => {
      try {
        const result = await reconciler.reconcile(job.data, job.timestamp);
        reconcileTotal.inc({ outcome: outcomeLabel(result.outcome) });
        // The caller sees the outcome; the service's log says it too (nothing silent).
        if (result.outcome.startsWith("error:")) logger.warn({ eventId: job.data.eventId, jobId: job.id, outcome: result.outcome }, "reconcile could not recover the event");
        return result;
      } catch (error) {
        if (!(error instanceof TenantRateLimitError)) throw error;
        // Every worker of the queue stops taking jobs until the bucket refills; this job
        // goes back to wait without spending an attempt.
        const waitMs = Math.min(error.retryAfterMs ?? 1000, 60_000);
        logger.warn({ eventId: job.data.eventId, waitMs }, "tenant rate limit outlasted the retries; pausing the reconcile queue");
        await worker.rateLimit(waitMs);
        throw Worker.RateLimitError();
      }
    }),
    {
      connection,
      prefix,
      telemetry: options.telemetry,
      // The pacer sets the pace of calls; concurrency only lets calls overlap the tenant's latency.
      concurrency: env.RECONCILE_RATE_PER_SECOND === undefined ? 20 : Math.min(50, Math.max(2, Math.ceil(env.RECONCILE_RATE_PER_SECOND))),
      // BullMQ honours worker.rateLimit() only with a limiter set. Jobs that make no call
      // (ids already received) may go faster than the call pace, hence a wide bound.
      limiter: { max: 1000, duration: 1000 },
      settings: { backoffStrategy: reconcileBackoff({ retryForMs: env.RECONCILE_RETRY_FOR_SECONDS * 1000, baseMs: options.retryBaseMs, maxMs: options.retryMaxMs }) },
    },
  );
  worker.on("error", (error) => logRedisError({ err: error }, "worker"));
  worker.on("failed", (job, error) => {
    // Set once the job failed for good (out of attempts or past RECONCILE_RETRY_FOR_SECONDS), not when it is retried.
    if (job?.finishedOn !== undefined) {
      reconcileTotal.inc({ outcome: "error" });
      logger.error({ err: error, eventId: job.data.eventId, jobId: job.id }, "reconcile job failed for good");
    }
  });
  logger.info({ rateShare: env.RECONCILE_RATE_SHARE, ratePerSecondCap: env.RECONCILE_RATE_PER_SECOND }, "reconcile worker started");

  let closing: Promise<void> | undefined;
  const hurried = new AbortController();
  return {
    hurry: () => hurried.abort(),
    close() {
      closing ??= closeWorkers({
        workers: [worker],
        running: inFlight.count,
        // Every reconcile ends by storing in Redis: none can end while it is away.
        runningWithoutRedis: () => 0,
        connection,
        timeoutMs: env.SHUTDOWN_TIMEOUT_MS,
        cutShort: hurried.signal,
        name: "the reconcile worker",
        what: "reconcile jobs",
        // Reconciling is idempotent: a job cut short is simply done again.
        cutWorkGoes: "they are taken up again once their lock expires",
        logger,
      }).then(() => undefined);
      return closing;
    },
  };
}

/** What the reconciler needs of the paced client: the delivery history and, for ids naming no stream, every stream id. */
export function reconcileTenantOf(tenant: PacedTenant, options: { streamCacheMs?: number; serviceName?: string } = {}): ReconcilerDeps["tenant"] {
  // Said once at start (report-what-is-off.ts); each job's outcome names the process.
  if ("unavailable" in tenant) return { unavailable: `${options.serviceName ?? "this process"} cannot reconcile: it has no tenant settings; set ${tenantSettings} for it and restart it` };
  const streams = createStreamIdCache(() => tenant.client.eventStreams({ take: 100 }), options.streamCacheMs);
  return { getDelivery: tenant.client.getDelivery, streamIds: streams.ids };
}

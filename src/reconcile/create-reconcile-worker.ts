import { Worker, type Telemetry } from "bullmq";
import { ConfigError, requireTenant, type Config } from "../config.js";
import type { Logger } from "../logger.js";
import { reconcileTotal } from "../metrics/registry.js";
import type { EventLedger } from "../queue/event-ledger.js";
import type { EventStore } from "../queue/event-store.js";
import { bullPrefix, reconcileQueueName } from "../queue/queue-names.js";
import { createRedis } from "../queue/redis-connection.js";
import { createTenantClient } from "../tenant/create-tenant-client.js";
import { TenantRateLimitError } from "../tenant/tenant-api-error.js";
import { createCallPacer } from "./create-call-pacer.js";
import { createReconciler, type ReconcilerDeps } from "./create-reconciler.js";
import { createStreamIdCache } from "./create-stream-id-cache.js";
import { pacedFetch } from "./paced-fetch.js";
import { outcomeLabel, type ReconcileJobData, type ReconcileResult } from "./reconcile-job.js";
import { settlesWithin } from "../settles-within.js";

export interface ReconcileWorkerOptions {
  /** RECONCILE_RATE_PER_SECOND, DEFAULT_STREAM_ID, QUEUE_PREFIX, SHUTDOWN_TIMEOUT_MS and the tenant settings. */
  config: Config;
  redisUrl: string;
  ledger: EventLedger;
  store: EventStore;
  logger: Logger;
  /** How long the stream list is reused for ids that name no stream. @defaultValue 60000 */
  streamCacheMs?: number;
  /** BullMQ telemetry, when tracing is on. */
  telemetry?: Telemetry;
}

export interface ReconcileWorker {
  /** Stops taking jobs; waits for those in flight at most SHUTDOWN_TIMEOUT_MS (a job cut short is taken up again: reconciling is idempotent). */
  close(): Promise<void>;
}

/**
 * Works through the `reconcile` queue: each job is one event id, its return value the
 * outcome. Tenant calls are paced at RECONCILE_RATE_PER_SECOND across every process
 * (create-call-pacer.ts); a 429 that outlasts the client's retries pauses the whole
 * queue until the tenant's reset and puts the job back without spending an attempt.
 */
export function createReconcileWorker(options: ReconcileWorkerOptions): ReconcileWorker {
  const { config, logger } = options;
  const { env } = config;
  const prefix = bullPrefix(env.QUEUE_PREFIX);
  const connection = createRedis(options.redisUrl, "worker", "streamkeeper-reconcile");
  connection.on("error", (error) => logger.warn({ err: error }, "reconcile: Redis connection error; reconnecting"));
  const pacer = createCallPacer(connection, `${prefix}:reconcile-pace`, env.RECONCILE_RATE_PER_SECOND);

  const reconciler = createReconciler({
    ledger: options.ledger,
    store: options.store,
    tenant: tenantOf(config, options, pacer),
    defaultStreamId: env.DEFAULT_STREAM_ID,
  });

  const worker: Worker<ReconcileJobData, ReconcileResult> = new Worker<ReconcileJobData, ReconcileResult>(
    reconcileQueueName,
    async (job) => {
      try {
        const result = await reconciler.reconcile(job.data);
        reconcileTotal.inc({ outcome: outcomeLabel(result.outcome) });
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
    },
    {
      connection,
      prefix,
      telemetry: options.telemetry,
      // The pacer sets the pace of calls; concurrency only lets calls overlap the tenant's latency.
      concurrency: Math.min(50, Math.max(2, Math.ceil(env.RECONCILE_RATE_PER_SECOND))),
      // BullMQ honours worker.rateLimit() only with a limiter set. Jobs that make no call
      // (ids already received) may go faster than the call pace, hence a wide bound.
      limiter: { max: 1000, duration: 1000 },
    },
  );
  worker.on("error", (error) => logger.warn({ err: error }, "reconcile worker error"));
  worker.on("failed", (job, error) => {
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) {
      reconcileTotal.inc({ outcome: "error" });
      logger.error({ err: error, eventId: job.data.eventId, jobId: job.id }, "reconcile job failed for good");
    }
  });
  logger.info({ ratePerSecond: env.RECONCILE_RATE_PER_SECOND }, "reconcile worker started");

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        if (!(await settlesWithin(worker.close(), env.SHUTDOWN_TIMEOUT_MS))) {
          logger.warn("reconcile jobs still running at the shutdown deadline; they are taken up again after their lock expires");
        }
        // QUIT waits behind commands queued while Redis is away: never let it hang shutdown.
        if (!(await settlesWithin(connection.quit(), 1000))) {
          await settlesWithin(worker.disconnect(), 1000);
          connection.disconnect();
        }
      })();
      return closing;
    },
  };
}

/** The tenant client behind the pacer, or why there is none (the settings to add). */
function tenantOf(config: Config, options: ReconcileWorkerOptions, pacer: ReturnType<typeof createCallPacer>): ReconcilerDeps["tenant"] {
  let tenant;
  try {
    tenant = requireTenant(config);
  } catch (error) {
    if (error instanceof ConfigError) return { unavailable: error.message };
    throw error;
  }
  const { logger } = options;
  const fetch = pacedFetch({
    pacer,
    apiBaseUrl: tenant.apiBaseUrl,
    onHold: (ms) => logger.warn({ holdMs: ms }, "tenant rate limit reached; holding reconcile calls"),
  });
  const client = createTenantClient({ ...tenant, logger, fetch });
  const streams = createStreamIdCache(() => client.eventStreams({ take: 100 }), options.streamCacheMs);
  return { getDelivery: client.getDelivery, streamIds: streams.ids };
}

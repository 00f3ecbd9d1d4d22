import { DelayedError, UnrecoverableError, Worker, type Telemetry } from "bullmq";
import type { Logger } from "../logging/logger.js";
import { createRedisErrorLog } from "../redis/redis-error-log.js";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { EntityVersions } from "../queue/entity-versions.js";
import type { EventLedger } from "../queue/event-ledger.js";
import type { FreshnessRecorder } from "../freshness/create-freshness-recorder.js";
import { circuitKey, deliveryQueueBullPrefix, deliveryQueueName } from "../queue/queue-names.js";
import type { RedisClient } from "../redis/redis-connection.js";
import { closeWorkers } from "../shutdown/close-workers.js";
import { createInFlight } from "../shutdown/in-flight.js";
import { createDeliveryProcessor, type DeliveryProcessorDeps, type DeliveryResult } from "./create-delivery-processor.js";
import { createDownstreamClient } from "./downstream-client.js";
import { backoffDelay } from "./retry-policy.js";
import { rateLimiter } from "./rate-limiter.js";
import { RetryableDeliveryError } from "./retryable-delivery-error.js";
import { createRouteCircuit, type CircuitSettings } from "./route-circuit.js";
import type { Route } from "../routes/route.js";
import { markAtCompletion } from "./mark-at-completion.js";
import { createStaleGuard } from "./stale-guard.js";

export interface DispatcherOptions {
  /**
   * The workers' shared connection, a `worker` one (`maxRetriesPerRequest: null`); the
   * caller owns it and closes it after `close()`. BullMQ adds a blocking one per worker.
   */
  connection: RedisClient;
  queuePrefix: string;
  routes: Route[];
  ledger: EventLedger;
  logger: Logger;
  /** DISPATCH_BACKOFF_BASE_MS */
  backoffBaseMs: number;
  /** DISPATCH_BACKOFF_MAX_MS */
  backoffMaxMs: number;
  /** DISPATCH_RETRY_WINDOW_SECONDS in ms; none: the route's attempts alone end the retries. */
  retryWindowMs?: number;
  /** The per-route circuit breaker (DISPATCH_CIRCUIT_*); none: off. */
  circuit?: CircuitSettings;
  /** SHUTDOWN_TIMEOUT_MS: how long `close()` waits for in-flight deliveries. */
  shutdownTimeoutMs: number;
  /**
   * How long a job stays locked to a worker that stopped renewing the lock (it crashed)
   * before another worker may take it over. Shorter means faster recovery after a crash,
   * but a worker whose event loop or Redis link stalls this long loses its job, which is
   * then delivered twice (same webhook-id). @defaultValue 30000 (BullMQ's)
   */
  lockDurationMs?: number;
  /** How often workers look for jobs whose lock expired. @defaultValue 30000 (BullMQ's) */
  stalledIntervalMs?: number;
  /** BullMQ telemetry, when tracing is on: a delivery joins the trace of its webhook. */
  telemetry?: Telemetry;
  /** Entity versions and leases for the `dropStale` routes; required when a route has it. */
  entityVersions?: EntityVersions;
  /** LOG_REPEAT_INTERVAL_SECONDS in ms: Redis errors are logged once per interval with their count. @defaultValue 60000 */
  logRepeatsEveryMs?: number;
  /**
   * Work the routes' queues under this BullMQ prefix instead of their own: what another key
   * layout left there is drained (upgrade/). Every such job reads the ledger before it
   * sends, as a re-run does: the same event may have come again and been delivered since.
   */
  drainPrefix?: string;
  /** Freshness at each 2xx (create-freshness-recorder.ts); the caller closes it after `close()`. */
  freshness?: FreshnessRecorder;
  /** The archive's outbox for attempts and outcomes (archive/archive-outbox.ts); none: the archive is off. */
  archive?: DeliveryProcessorDeps["archive"];
  /** TRANSFORM_TIMEOUT_MS. @defaultValue 100 */
  transformTimeoutMs?: number;
}

export interface Dispatcher {
  /** Stops taking jobs and waits for in-flight deliveries, at most `shutdownTimeoutMs`. */
  close(): Promise<void>;
  /** Ends that wait now (a second signal): in-flight deliveries go back to their queue. */
  hurry(): void;
}

/**
 * One BullMQ worker per route queue, each with the route's concurrency and its own HTTP
 * connection pool, so a slow or failing route never delays or repeats another
 * (README.md#routes). The workers share one Redis connection with
 * `maxRetriesPerRequest: null`; BullMQ adds a blocking connection per worker.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { routes, ledger, logger, shutdownTimeoutMs } = options;
  // Before any worker is made, so a wiring mistake leaks nothing.
  const staleGuards = routes.map((route) => {
    if (!route.dropStale) return undefined;
    if (!options.entityVersions) throw new Error(`route ${route.name} has dropStale but the dispatcher was given no entityVersions; pass createEntityVersions(...)`);
    return createStaleGuard({ route, versions: options.entityVersions, ledger, logger });
  });
  const { connection } = options;
  // An outage raises these on every reconnect attempt, per worker.
  const logRedisError = createRedisErrorLog(logger, "dispatch: Redis error; reconnecting", options.logRepeatsEveryMs ?? 60_000);
  const shutdown = new AbortController();
  const backoff = { baseMs: options.backoffBaseMs, maxMs: options.backoffMaxMs };

  const clients = routes.map(createDownstreamClient);
  const inFlight = createInFlight();
  const workers = routes.map((route, index) => {
    const circuit = options.circuit && createRouteCircuit({
      route: route.name,
      key: circuitKey(options.queuePrefix, route.name),
      redis: connection,
      settings: options.circuit,
      // BullMQ's queue-wide hold (a key in Redis), honoured by the workers of every process.
      hold: (ms) => worker.rateLimit(ms),
      logger,
    });
    const processJob = inFlight.track(createDeliveryProcessor({ route, client: clients[index]!, ledger, logger, shutdown: shutdown.signal, staleGuard: staleGuards[index], circuit, retryWindowMs: options.retryWindowMs, freshness: options.freshness, archive: options.archive, transformTimeoutMs: options.transformTimeoutMs }));
    const worker: Worker<DeliveryJobData, DeliveryResult> = new Worker<DeliveryJobData, DeliveryResult>(
      deliveryQueueName(route.name),
      options.drainPrefix !== undefined ? (job, token) => ((job.data = { ...job.data, recheck: true }), processJob(job, token)) : processJob,
      {
        connection,
        prefix: options.drainPrefix ?? deliveryQueueBullPrefix(options.queuePrefix, route.name),
        concurrency: route.concurrency,
        limiter: rateLimiter(route.ratePerSecond),
        // Spelled out: an `undefined` here would replace BullMQ's default.
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 30_000,
        // A job whose worker died while holding it is taken up again; BullMQ's default (1)
        // would make a second crash on the same delivery a dead letter.
        maxStalledCount: 3,
        telemetry: options.telemetry,
        settings: {
          // Jobs carry the custom backoff type "streamkeeper" (delivery-queues.ts), which
          // sends BullMQ here for every retry delay.
          backoffStrategy: (attemptsMade, _type, error) =>
            backoffDelay(attemptsMade, backoff, error instanceof RetryableDeliveryError ? error.retryAfterMs : undefined),
        },
      },
      // A delivered job completes with its delivered mark, in one script call.
      markAtCompletion(ledger, route.name, logger),
    );
    worker.on("error", (error) => logRedisError({ err: error, route: route.name }, route.name));
    // Our own outcomes are logged by the processor; this catches the rest (a Redis fault).
    worker.on("failed", (job, error) => {
      if (error instanceof RetryableDeliveryError || error instanceof UnrecoverableError || error instanceof DelayedError) return;
      logger.warn({ err: error, route: route.name, jobId: job?.id }, "delivery attempt failed inside streamkeeper (not at the downstream); BullMQ retries it while attempts remain");
    });
    worker.on("stalled", (jobId) =>
      logger.warn({ route: route.name, jobId }, "a delivery's worker stopped (crash?); the job goes back to the queue"),
    );
    return worker;
  });
  logger.info({ routes: routes.map(({ name, concurrency, ratePerSecond }) => ({ name, concurrency, ratePerSecond })) }, "dispatcher started");

  let closing: Promise<void> | undefined;
  const hurried = new AbortController();
  return {
    hurry() {
      hurried.abort();
    },
    close() {
      closing ??= (async () => {
        const closed = await closeWorkers({
          workers,
          running: inFlight.count,
          runningWithoutRedis: () => clients.reduce((sum, client) => sum + client.inFlight(), 0),
          connection,
          timeoutMs: shutdownTimeoutMs,
          cutShort: hurried.signal,
          name: "the dispatcher",
          what: "deliveries",
          cutWorkGoes: "they go back to their queue without spending an attempt",
          // BullMQ's close(true) cannot follow a close() (it returns the first call's
          // promise), so we cut the attempts ourselves: each goes back to its queue.
          abortRunning: () => {
            shutdown.abort();
            for (const client of clients) client.abortAll();
          },
          logger,
        });
        for (const client of clients) client.close();
        if (closed) logger.info("dispatcher stopped");
      })();
      return closing;
    },
  };
}

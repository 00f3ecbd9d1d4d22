import type { Config } from "../config/config.js";
import { createArchiveOutbox } from "../archive/archive-outbox.js";
import { createDispatcher, type DispatcherOptions } from "../dispatch/create-dispatcher.js";
import { createFreshnessRecorder } from "../freshness/create-freshness-recorder.js";
import type { Logger } from "../logging/logger.js";
import { createEntityVersions } from "../queue/entity-versions.js";
import { deliveryMarkGatherMs } from "../queue/event-ledger.js";
import { settlesWithin } from "../time/settles-within.js";
import type { Route } from "../routes/route.js";
import type { Tracing } from "../telemetry/start-tracing.js";
import type { Connections } from "./create-connections.js";
import type { Stores } from "./create-stores.js";

export interface Delivery {
  /** Another dispatcher with the same processors and records, for some routes on other queues (upgrade/ drains an earlier layout with it). */
  dispatcherFor(routes: Route[], logger: Logger, options: Pick<DispatcherOptions, "drainPrefix">): { close(): Promise<void>; hurry(): void };
  /** Stops taking jobs; waits for in-flight deliveries at most SHUTDOWN_TIMEOUT_MS. */
  close(): Promise<void>;
  /** Ends that wait now (a second signal): in-flight deliveries go back to their queue. */
  hurry(): void;
  /** What deliveries recorded and not yet written (the freshness sketch, the marks sent apart and gathered): after every dispatcher closed. */
  flush(): Promise<void>;
}

/** How long a stop waits for the deliveries' records to reach Redis: a healthy Redis answers within milliseconds. */
const flushWithinMs = 1000;

/** A worker role's delivery to the routes: one BullMQ worker per route queue (dispatch/). */
export function createDelivery(deps: { config: Config; logger: Logger; routes: Route[]; connections: NonNullable<Connections["worker"]>; stores: Stores; archive: boolean; tracing: Tracing }): Delivery {
  const { env } = deps.config;
  // Deliveries are recorded on a connection that waits out a slow Redis: the fail-fast
  // ingress client would leave a 2xx unrecorded, and so sent again.
  const { records, dispatch } = deps.connections;
  // The operator view's freshness and delivery_lag_seconds (docs/operating.md, "Freshness").
  const freshness = createFreshnessRecorder({ redis: records, queuePrefix: env.QUEUE_PREFIX, logger: deps.logger });
  // Gathered as the ledger's marks are (deliveryMarkGatherMs), and lost alike with a crash in that time: the archive then lacks those attempts' records, never their deliveries.
  const attemptOutbox = deps.archive ? createArchiveOutbox(records, env.QUEUE_PREFIX, { gatherMs: deliveryMarkGatherMs }) : undefined;
  const options: Omit<DispatcherOptions, "routes" | "logger"> = {
    archive: attemptOutbox && ((record) => attemptOutbox([record])),
    connection: dispatch,
    queuePrefix: env.QUEUE_PREFIX,
    ledger: deps.stores.deliveryLedger!,
    backoffBaseMs: env.DISPATCH_BACKOFF_BASE_MS,
    backoffMaxMs: env.DISPATCH_BACKOFF_MAX_MS,
    retryWindowMs: env.DISPATCH_RETRY_WINDOW_SECONDS * 1000,
    circuit: { failures: env.DISPATCH_CIRCUIT_FAILURES, probeMinMs: env.DISPATCH_CIRCUIT_PROBE_MIN_MS, probeMaxMs: env.DISPATCH_CIRCUIT_PROBE_MAX_MS },
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    lockDurationMs: env.DISPATCH_LOCK_DURATION_MS,
    stalledIntervalMs: env.DISPATCH_LOCK_DURATION_MS,
    telemetry: deps.tracing.bullmq,
    entityVersions: createEntityVersions(records, env.QUEUE_PREFIX, env.DEDUPE_TTL_SECONDS),
    logRepeatsEveryMs: env.LOG_REPEAT_INTERVAL_SECONDS * 1000,
    freshness,
    transformTimeoutMs: env.TRANSFORM_TIMEOUT_MS,
  };
  const dispatcher = createDispatcher({ ...options, routes: deps.routes, logger: deps.logger });
  return {
    dispatcherFor: (routes, logger, overrides) => createDispatcher({ ...options, ...overrides, routes, logger }),
    close: () => dispatcher.close(),
    hurry: () => dispatcher.hurry(),
    // Bounded: with Redis away the records connection waits forever, and the stop must not (docs/operating.md).
    flush: async () => void (await settlesWithin(Promise.all([freshness.close(), options.ledger.flush(), attemptOutbox?.flush()]), flushWithinMs)),
  };
}

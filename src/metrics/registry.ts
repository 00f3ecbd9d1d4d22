import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { createFastCounter } from "./create-fast-counter.js";
import { createFastHistogram } from "./create-fast-histogram.js";

/**
 * The one metrics registry of the process (the only module-level singleton, docs/architecture.md).
 * Names and labels are docs/operating.md#metrics's; every label value is bounded (event types outside
 * the tenant's list share `other`, statuses are numbers, routes come from config).
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "streamkeeper_" });

/** Millisecond-scale latencies: 0.5 ms to 10 s. */
const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const webhookRequests = createFastCounter({
  name: "streamkeeper_webhook_requests_total",
  help: "Webhook requests answered, by HTTP status",
  labelNames: ["status"] as const,
  registers: [registry],
});

export const webhookRequestDuration = createFastHistogram({
  name: "streamkeeper_webhook_request_duration_seconds",
  help: "Time from receiving a webhook request to answering it",
  buckets: latencyBuckets,
  registers: [registry],
});

export const eventsReceived = createFastCounter({
  name: "streamkeeper_events_received_total",
  help: "Events stored, by type and origin (webhook, reconcile or pull)",
  labelNames: ["type", "origin"] as const,
  registers: [registry],
});

export const eventsDuplicate = new Counter({
  name: "streamkeeper_events_duplicate_total",
  help: "Events answered as duplicates of an id seen within DEDUPE_TTL_SECONDS",
  labelNames: ["origin"] as const,
  registers: [registry],
});

export const eventsOwnJobId = new Counter({
  name: "streamkeeper_events_own_job_id_total",
  help: "Events stored for a route under a job id of their own, because a finished job of an earlier arrival of their id (older than DEDUPE_TTL_SECONDS) holds the usual one: old is dead_letter (kept for replay) or delivered (a delivered job still kept)",
  labelNames: ["route", "old"] as const,
  registers: [registry],
});

export const eventsNonconforming = new Counter({
  name: "streamkeeper_events_nonconforming_total",
  help: "Events accepted although they break a tenant rule (id length, event type list), by rule",
  labelNames: ["rule"] as const,
  registers: [registry],
});

export const replicaAcksMissing = new Counter({
  name: "streamkeeper_replica_acks_missing_total",
  help: "Webhook requests answered 503 because fewer than REDIS_MIN_REPLICAS replicas acknowledged their write in time",
  registers: [registry],
});

export const eventsRejected = new Counter({
  name: "streamkeeper_events_rejected_total",
  help: "Webhook requests refused as invalid, by reason",
  labelNames: ["reason"] as const,
  registers: [registry],
});

/**
 * Scrape-time readers (queue counts, Redis reachability) registered by the composition
 * root through `registerQueueGauges`. The gauges below are collected together by one
 * `registry.metrics()` call, so they share one read instead of each reading Redis.
 */
const scrapeReaders = new Set<() => Promise<boolean>>();
/** The last read asked for, and whether it has started: one not started yet serves every caller until it starts. */
let latest: { read: Promise<void>; started: boolean } | undefined;

/**
 * Adds a reader run once per scrape; returns its removal. A reader resolves whether
 * Redis answered it, and never rejects: `/metrics` must answer while Redis is down.
 */
export function onScrape(reader: () => Promise<boolean>): () => void {
  scrapeReaders.add(reader);
  return () => void scrapeReaders.delete(reader);
}

/**
 * Every caller gets a read that started after it asked: a read already running (the
 * operator view's sampler, another scrape) may predate what the caller just stored, so
 * the caller's read starts once that one is over. Callers that ask before a read starts
 * share it, as one scrape's gauges do (prom-client calls their `collect` in one tick).
 * One read runs at a time: each resets the gauges it fills.
 */
function readAtScrape(): Promise<void> {
  if (scrapeReaders.size === 0) return Promise.resolve();
  if (latest !== undefined && !latest.started) return latest.read;
  const next = { read: Promise.resolve(), started: false };
  const run = async () => {
    next.started = true;
    // Forget queues that are gone (a route removed from config) before re-reading.
    queueJobs.reset();
    queueOldestWaitingAge.reset();
    routeWaiting.reset();
    const answered = await Promise.all([...scrapeReaders].map((read) => read()));
    redisUp.set(answered.every(Boolean) ? 1 : 0);
  };
  next.read = (latest?.read ?? Promise.resolve()).then(run, run).finally(() => {
    if (latest === next) latest = undefined;
  });
  latest = next;
  return next.read;
}

export const queueJobs = new Gauge({
  name: "streamkeeper_queue_jobs",
  help: "Jobs per queue and state (waiting, prioritized, delayed, active, completed, failed), read at scrape time",
  labelNames: ["queue", "state"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

/** The lanes of a route's queue (queue/lane.ts): its waiting jobs without a priority, and those behind them. */
export const routeWaiting = new Gauge({
  name: "streamkeeper_route_waiting",
  help: "Jobs queued for a route, ready to be sent, by lane: live (no priority) or late (waiting behind live ones: events late when they came, reconciled and replayed ones); retrying jobs are in queue_jobs{state=\"delayed\"}. Read at scrape time",
  labelNames: ["route", "lane"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const queueOldestWaitingAge = new Gauge({
  name: "streamkeeper_queue_oldest_waiting_age_seconds",
  help: "Age of the job that has waited longest for a worker in each queue (the backlog signal; 0 when none waits), read at scrape time",
  labelNames: ["queue"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const dispatchTotal = createFastCounter({
  name: "streamkeeper_dispatch_total",
  help: "Downstream delivery attempts by route and outcome (delivered, retry, dead_letter; stale: skipped by a dropStale route as older than what it has; filtered: left out by the route's filter or testEvents, no job)",
  labelNames: ["route", "outcome"] as const,
  registers: [registry],
});

export const dispatchEntityWaits = new Counter({
  name: "streamkeeper_dispatch_entity_waits_total",
  help: "Deliveries of dropStale routes put back for a moment because another delivery of the same entity was in flight",
  labelNames: ["route"] as const,
  registers: [registry],
});

export const dispatchEntityLeaseExpired = new Counter({
  name: "streamkeeper_dispatch_entity_lease_expired_total",
  help: "Deliveries of dropStale routes that outlived their entity lease (2 × timeoutMs + 1 s): another state of the entity may have been sent alongside",
  labelNames: ["route"] as const,
  registers: [registry],
});

export const dispatchDuration = createFastHistogram({
  name: "streamkeeper_dispatch_duration_seconds",
  help: "Duration of one downstream delivery attempt",
  labelNames: ["route"] as const,
  buckets: latencyBuckets,
  registers: [registry],
});

export const reconcileTotal = new Counter({
  name: "streamkeeper_reconcile_total",
  help: "Reconcile outcomes (recovered, already_received, not_failed, no_payload, not_found, error)",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

export const mgmtApiRequests = new Counter({
  name: "streamkeeper_mgmt_api_requests_total",
  help: "Tenant management API requests by operation and HTTP status (0: network error)",
  labelNames: ["operation", "status"] as const,
  registers: [registry],
});

export const mgmtApiRateLimitRemaining = new Gauge({
  name: "streamkeeper_mgmt_api_rate_limit_remaining",
  help: "X-RateLimit-Remaining of the last tenant management API answer",
  registers: [registry],
});

export const redisUp = new Gauge({
  name: "streamkeeper_redis_up",
  help: "1 when Redis answered the last scrape (or readiness check), 0 otherwise",
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const routeCircuitOpen = new Gauge({
  name: "streamkeeper_route_circuit_open",
  help: "1 while a route has stopped sending after consecutive failed deliveries (its circuit is open; one delivery probes at a growing interval), 0 otherwise; read from Redis at scrape time",
  labelNames: ["route"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const eventsUnrouted = new Counter({
  name: "streamkeeper_events_unrouted_total",
  help: "Stored events that no route matched, so delivered nowhere, by type",
  labelNames: ["type"] as const,
  registers: [registry],
});

export const redisMemoryUsed = new Gauge({
  name: "streamkeeper_redis_memory_used_bytes",
  help: "Memory Redis uses (INFO memory used_memory), read at scrape time",
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const redisMemoryMax = new Gauge({
  name: "streamkeeper_redis_memory_max_bytes",
  help: "Redis maxmemory, past which a noeviction Redis refuses writes (0: no limit), read at scrape time",
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const sweepRuns = new Counter({
  name: "streamkeeper_sweep_runs_total",
  help: "Sweeps of a stream's failed deliveries, by result (ok: every window up to now read and handled; error: stopped, retried next interval)",
  labelNames: ["stream", "result"] as const,
  registers: [registry],
});

export const sweepFailedDeliveries = new Counter({
  name: "streamkeeper_sweep_failed_deliveries_total",
  help: "Failed deliveries the sweep found in the tenant's list that this service did not have",
  labelNames: ["stream"] as const,
  registers: [registry],
});

export const sweepLag = new Gauge({
  name: "streamkeeper_sweep_lag_seconds",
  help: "Now minus the end of the last window of the stream read completely by the sweep (before the first, minus the start of its first lookback), read at scrape time",
  labelNames: ["stream"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const tenantUnrecoveredDeliveries = new Gauge({
  name: "streamkeeper_tenant_unrecovered_deliveries",
  help: "Failed deliveries the tenant lists within RECONCILE_SWEEP_LOOKBACK_SECONDS that this service still does not have (no payload, errors), read at scrape time",
  labelNames: ["stream"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

/**
 * Stream health (README.md#stream-health). The worker's watcher stores what it read
 * in Redis and every worker process reports it at scrape time (streams/register-stream-gauges.ts),
 * so all of them agree whichever process made the tenant call: aggregate with `min by (stream)`.
 */
export const streamEnabled = new Gauge({
  name: "streamkeeper_stream_enabled",
  help: "1 while a swept stream is enabled, 0 while it is disabled (the tenant then sends it nothing and keeps nothing), as last read from the tenant",
  labelNames: ["stream"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const streamAutoEnableBackoff = new Gauge({
  name: "streamkeeper_stream_auto_enable_backoff_seconds",
  help: "With STREAM_AUTO_ENABLE, seconds until a disabled stream that the tenant disabled again may be enabled again (0: at the next check)",
  labelNames: ["stream"] as const,
  registers: [registry],
  collect: function () {
    return readAtScrape();
  },
});

export const streamAutoEnables = new Counter({
  name: "streamkeeper_stream_auto_enable_total",
  help: "Swept streams found disabled and enabled again by this process (STREAM_AUTO_ENABLE)",
  labelNames: ["stream"] as const,
  registers: [registry],
});

export const streamWatchRuns = new Counter({
  name: "streamkeeper_stream_watch_runs_total",
  help: "Reads of the swept streams' status by this process, by result (ok, error)",
  labelNames: ["result"] as const,
  registers: [registry],
});

export const embeddedRedisRestarts = new Counter({
  name: "streamkeeper_embedded_redis_restarts_total",
  help: "Times this process found the embedded redis-server dead and restarted it from its append-only file",
  registers: [registry],
});

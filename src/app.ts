import { ConfigError, type Config } from "./config.js";
import { createDispatcher } from "./dispatch/create-dispatcher.js";
import { describeEvent } from "./admin/describe-event.js";
import { describeArchivedEvent } from "./admin/describe-archived-event.js";
import { archiveOutboxKey, createArchiveOutbox } from "./archive/archive-outbox.js";
import { startArchive } from "./archive/start-archive.js";
import { createReplays } from "./archive/replays.js";
import { createReplayRunner } from "./archive/replay-runner.js";
import { createReplayRouter } from "./http/replay-router.js";
import { createArchiveRouter } from "./http/archive-router.js";
import { loadRoutes, unmatchedPatternWarnings } from "./routes/load-routes.js";
import { createAdminApp } from "./http/admin-app.js";
import { createDashboardRouter } from "./http/dashboard-router.js";
import { createReceiverApp } from "./http/receiver-app.js";
import { createConfigRouter } from "./http/config-router.js";
import { createConnectRouter } from "./http/connect-router.js";
import { createReconcileRouter } from "./http/reconcile-router.js";
import { createDeadLettersRouter } from "./http/dead-letters-router.js";
import { createRoutesRouter } from "./http/routes-router.js";
import { createOrphanedRoutes } from "./queue/orphaned-routes.js";
import { reportOrphanedRoutes } from "./queue/report-orphaned-routes.js";
import { registerOrphanedRouteGauges, routeOrphanedJobs } from "./metrics/register-orphaned-route-gauges.js";
import { boundAddress } from "./http/bound-address.js";
import { serveLater } from "./http/serve-later.js";
import { resolveWebhookAuth } from "./webhook-credentials.js";
import { reportRotation } from "./report-rotation.js";
import type { Logger } from "./logger.js";
import { registerQueueGauges } from "./metrics/register-queue-gauges.js";
import { registerRedisGauges } from "./metrics/register-redis-gauges.js";
import { redisUp } from "./metrics/registry.js";
import { createAdmission } from "./queue/admission.js";
import { createDeliveryQueues } from "./queue/delivery-queues.js";
import { createEntityVersions } from "./queue/entity-versions.js";
import { createEventLedger } from "./queue/event-ledger.js";
import { createEventStore } from "./queue/event-store.js";
import { countStoredEvents } from "./metrics/count-stored-events.js";
import { routesMatching } from "./routes/route.js";
import { createFanOut } from "./queue/fan-out.js";
import { drainLegacyLayout, type Closable, type LegacyDrainOptions } from "./queue/drain-legacy-layout.js";
import { bullPrefix, circuitKey, deliveryQueueBullPrefix } from "./queue/queue-names.js";
import { closeRedis, createRedis, untilReady } from "./queue/redis-connection.js";
import { createReplicaAcks } from "./queue/replica-acks.js";
import { checkRedisVersion } from "./queue/redis-version.js";
import { resolveRedis } from "./queue/resolve-redis.js";
import { createRedisErrorLog } from "./queue/redis-error-log.js";
import { watchRedisReachability } from "./queue/watch-redis-reachability.js";
import { createReconcileQueue } from "./reconcile/create-reconcile-queue.js";
import { createPacedTenant } from "./reconcile/create-paced-tenant.js";
import { createReconcileWorker, reconcileTenantOf } from "./reconcile/create-reconcile-worker.js";
import { createReconciler } from "./reconcile/create-reconciler.js";
import { reportWhatIsOff } from "./service-config/report-what-is-off.js";
import { describeServiceConfig, serviceLabel } from "./service-config/service-config.js";
import { registerSweepGauges } from "./metrics/register-sweep-gauges.js";
import { createSweepRouter } from "./http/sweep-router.js";
import { adoptLegacySweepState } from "./sweep/adopt-legacy-sweep-state.js";
import { createSweepState } from "./sweep/create-sweep-state.js";
import { createSweeper } from "./sweep/create-sweeper.js";
import { createWindowRunner } from "./sweep/create-window-runner.js";
import { createStreamConnector } from "./streams/create-stream-connector.js";
import { createStreamWatcher } from "./streams/create-stream-watcher.js";
import { sweepScopeOf } from "./streams/swept-streams.js";
import { startTracing } from "./telemetry/start-tracing.js";
import { describeOverview } from "./admin/describe-overview.js";
import { shareRecent } from "./admin/share-recent.js";
import { createFreshnessReader } from "./freshness/create-freshness-reader.js";
import { reuseRecentReads } from "./freshness/reuse-recent-reads.js";
import { createFreshnessRecorder, type FreshnessRecorder } from "./freshness/create-freshness-recorder.js";
import { auditAdminWrites } from "./http/audit-admin-writes.js";
import { createOperatorViewRouter } from "./http/operator-view-router.js";
import { readCircuits, readQueueFigures } from "./metrics/read-overview-gauges.js";
import { createStreamHealthStore } from "./streams/stream-health-store.js";
import { sweepPlan } from "./streams/swept-streams.js";
import { createPullRouter } from "./http/pull-router.js";
import { createPuller } from "./pull/create-puller.js";
import { parsePullStart } from "./pull/pull-start.js";
import { createPullState } from "./pull/pull-state.js";

export type Role = "all" | "receiver" | "worker";

/** A port that cannot be bound is a setting to change (exit 2), not a failure of the service. */
function portProblem(setting: string, port: number) {
  return (error: NodeJS.ErrnoException): never => {
    if (error.code === "EADDRINUSE") throw new ConfigError([`${setting} ${port} is already in use: stop what listens there or choose another ${setting}`]);
    if (error.code === "EACCES") throw new ConfigError([`${setting} ${port} needs privileges: choose a port above 1023`]);
    throw error;
  };
}

export interface Service {
  /** The public ingress, when this role has one. */
  publicUrl?: string;
  adminUrl: string;
  close(): Promise<void>;
  /** During close(): stop waiting for in-flight deliveries (a second signal); they go back to their queue. */
  hurry(): void;
}

/**
 * The composition root: builds every part once and wires them for the role.
 * `receiver` takes webhooks, `worker` delivers and reconciles, `all` does both.
 */
export async function startService(config: Config, logger: Logger, role: Role): Promise<Service> {
  const { env } = config;
  const routes = await loadRoutes(config);
  if (routes.length === 0) {
    // Every role: a receiver without routes would answer 202 for events it delivers nowhere.
    if (env.ROUTES_FILE !== undefined) throw new ConfigError([`ROUTES_FILE ${env.ROUTES_FILE} lists no route: add at least one (name, match, url); without one, every event would be stored and delivered nowhere`]);
    throw new ConfigError(["no downstream route: set ROUTES_FILE (a YAML or JSON file of routes) or DOWNSTREAM_URL (one route for every event); without one, every event would be stored and delivered nowhere"]);
  }
  for (const warning of unmatchedPatternWarnings(routes)) logger.warn(`${warning}; this pattern sends the route nothing (fix it in ROUTES_FILE)`);
  const auth = role === "worker" ? undefined : await resolveWebhookAuth(config);
  reportRotation(config, auth, logger);
  // Ports first: one in use stops the start before anything in Redis changes (serve-later.ts).
  const publicServer = auth ? await serveLater(env.PORT, env.HOST, { handlerSendsContinue: true, requestTimeoutMs: env.WEBHOOK_REQUEST_TIMEOUT_MS }).catch(portProblem("PORT", env.PORT)) : undefined;
  const admin = await serveLater(env.ADMIN_PORT, env.ADMIN_HOST).catch(async (error: NodeJS.ErrnoException) => {
    await publicServer?.close(0);
    return portProblem("ADMIN_PORT", env.ADMIN_PORT)(error);
  });
  const redis = await resolveRedis(config, logger, `start --role ${role}`);
  const client = createRedis(redis.url, "client", `streamkeeper-${role}`);
  client.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
  client.once("ready", () => void checkEvictionPolicy());
  // Served at GET /admin/config once the ports are bound; nothing is published before (a
  // start that fails changes nothing commands see).
  const serviceConfig = describeServiceConfig(config, routes, role);
  reportWhatIsOff(serviceConfig, env, logger);
  // Start even when Redis is down (the ingress answers 503 and /readyz fails until it is back).
  const reachable = await untilReady(client, 5000).then(
    () => true,
    (error: Error) => (logger.error(`${error.message}; starting anyway`), false),
  );
  // Too old a Redis is a setting to change (exit 2); one that comes up later is checked then.
  if (reachable) {
    await checkRedisVersion(client).catch(async (error: unknown) => {
      client.disconnect();
      await redis.release();
      await Promise.all([publicServer?.close(0), admin.close(0)]);
      throw error;
    });
  } else {
    client.once("ready", () => void checkRedisVersion(client).catch((error: Error) => logger.error(error.message)));
  }
  // One line per outage and per recovery (the start said it already when Redis was away).
  const unwatchRedis = watchRedisReachability(client, logger, reachable);

  const tracing = await startTracing(env.OTEL_EXPORTER_OTLP_ENDPOINT, logger);
  const ledger = createEventLedger(client, env.QUEUE_PREFIX, env.DEDUPE_TTL_SECONDS, env.LEDGER_SHARDS);
  if (reachable) {
    const shards = await ledger.shards().catch(() => env.LEDGER_SHARDS);
    if (shards !== env.LEDGER_SHARDS) {
      logger.warn({ ledgerShards: shards }, `LEDGER_SHARDS=${env.LEDGER_SHARDS} is not used: this Redis's ledger has ${shards} shards, fixed when it was first written; set LEDGER_SHARDS=${shards}, or see docs/deploy.md (Sizing the ledger) to change it`);
    }
  }
  // Off the acknowledgement path: its outbox is in Redis, Postgres is read by its writer alone (docs/architecture.md).
  const archive = await startArchive({ config, logger, redisUrl: redis.url, client, who: `start --role ${role}` });
  const queues = createDeliveryQueues(client, env.QUEUE_PREFIX, routes, { ageSeconds: env.COMPLETED_JOB_RETENTION_SECONDS, count: env.COMPLETED_JOB_RETENTION_COUNT }, tracing.bullmq);
  const storeOutbox = archive && createArchiveOutbox(client, env.QUEUE_PREFIX);
  // A new id is stored in one round trip (admission.ts), the archive's outbox entry with it.
  const admit = createAdmission({ ledger, queues, outboxKey: archive ? archiveOutboxKey(env.QUEUE_PREFIX) : undefined });
  const store = countStoredEvents(createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes), archive: storeOutbox && ((record) => storeOutbox([record])), admit }));
  const reconcileQueue = createReconcileQueue(client, env.QUEUE_PREFIX, tracing.bullmq);
  const replayRunner = archive && createReplayRunner({ pool: archive.pool, queues, logger });
  const logRepeatsEveryMs = env.LOG_REPEAT_INTERVAL_SECONDS * 1000;
  const logQueueError = createRedisErrorLog(logger, "queue: Redis error", logRepeatsEveryMs);
  for (const queue of [...queues.all(), reconcileQueue.queue]) {
    // Without a listener a Redis outage prints raw stack traces; the ingress answers 503 meanwhile.
    queue.on("error", (error) => logQueueError({ err: error, queue: queue.name }, queue.name));
  }
  // One key in the shared slot and one in each route queue's: on a cluster, ready means
  // every slot an event needs to be queued answers.
  const readyKeys = [bullPrefix(env.QUEUE_PREFIX), ...routes.map((route) => deliveryQueueBullPrefix(env.QUEUE_PREFIX, route.name))].map((tag) => `${tag}:readyz`);
  const ready = async () => {
    try {
      await Promise.all(readyKeys.map((key) => client.set(key, Date.now(), "PX", 10_000)));
      redisUp.set(1);
      return true;
    } catch {
      redisUp.set(0);
      return false;
    }
  };

  // One paced tenant client per process, shared by everything that calls the tenant by
  // itself; its pace lives in Redis, on a connection that waits out an outage.
  const tenantConnection = createRedis(redis.url, "worker", `streamkeeper-${role}-tenant`);
  tenantConnection.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
  const tenant = createPacedTenant({ config, redis: tenantConnection, logger });
  // Recovers from the tenant's failed-deliveries list (sweep, `reconcile --since`) in this
  // process; reconcile jobs by id run in the reconcile worker's own.
  const listReconciler = createReconciler({ ledger, store, tenant: reconcileTenantOf(tenant), defaultStreamId: env.DEFAULT_STREAM_ID });
  const lookbackMs = env.RECONCILE_SWEEP_LOOKBACK_SECONDS * 1000;
  // Read on the fail-fast client: GET /admin/sweep and a scrape answer while Redis is away.
  const sweepStatus = createSweepState(client, env.QUEUE_PREFIX);
  const pullState = createPullState(client, env.QUEUE_PREFIX);

  // Routes renamed or removed whose events still wait (docs/operating.md, Removing a route).
  const orphans = createOrphanedRoutes(client, env.QUEUE_PREFIX, routes.map((route) => route.name));
  const orphaned = new Set(reachable ? await reportOrphanedRoutes(orphans, logger) : []);
  const unregisterOrphanGauges = registerOrphanedRouteGauges(() => [...orphaned], orphans.count, (route) => orphaned.delete(route));
  const unregisterQueueGauges = registerQueueGauges(client, () => [...queues.all(), reconcileQueue.queue]);
  const unregisterRedisGauges = registerRedisGauges(client, new Map(routes.map((route) => [route.name, circuitKey(env.QUEUE_PREFIX, route.name)])));
  // Shutdown order: stop taking webhooks first, then finish deliveries and reconciles.
  const closers: Array<() => Promise<void>> = [];
  const hurries: Array<() => void> = [];
  // Jobs an earlier release left under the shared hash tag: a worker role drains them,
  // every role reports what is left (docs/deploy.md, Upgrading).
  let legacyDrain: Closable | undefined;
  const drainLegacy = (drain?: LegacyDrainOptions["drain"]) =>
    drainLegacyLayout({ redis: client, queuePrefix: env.QUEUE_PREFIX, routes: routes.map((route) => route.name), logger, drain });
  /**
   * Closes what was started, in order: every step runs even when one before it fails (its
   * error is thrown at the end), so nothing stays open.
   */
  const teardown = async () => {
    const steps: Array<() => Promise<unknown>> = [
      ...closers,
      async () => legacyDrain?.close(),
      async () => (unregisterQueueGauges(), unregisterRedisGauges(), unregisterOrphanGauges()),
      () => orphans.close(),
      async () => admin.close(env.SHUTDOWN_TIMEOUT_MS),
      async () => replayRunner?.close(),
      () => queues.close(),
      () => reconcileQueue.close(),
      async () => archive?.close(),
      () => closeRedis(tenantConnection),
      async () => unwatchRedis(),
      () => closeRedis(client),
      () => redis.release(),
      () => tracing.shutdown(),
    ];
    let failure: unknown;
    for (const step of steps) await step().catch((error: unknown) => (failure ??= error));
    if (failure !== undefined) throw failure;
  };
  if (auth) {
    const receiver = createReceiverApp({
      auth,
      store,
      maxBodyBytes: env.WEBHOOK_MAX_BODY_BYTES,
      defaultStreamId: env.DEFAULT_STREAM_ID,
      ready,
      alive: redis.healthy,
      logger,
      logRepeatsEveryMs,
      replicated: env.REDIS_MIN_REPLICAS > 0 ? createReplicaAcks(client, env.REDIS_MIN_REPLICAS) : undefined,
    });
    publicServer!.attach(tracing.traceRequests(receiver, "receiver"));
    closers.push(() => publicServer!.close(env.SHUTDOWN_TIMEOUT_MS));
    logger.info({ url: publicServer!.url, listening: boundAddress(publicServer!), auth: auth.method, routes: routes.map((route) => route.name) }, "receiving webhooks");
  }
  if (role !== "receiver") {
    // The dispatcher records deliveries on a connection that waits out a slow Redis: the
    // fail-fast ingress client would make a 2xx unrecorded, and so sent again.
    const ledgerConnection = createRedis(redis.url, "worker", `streamkeeper-${role}-ledger`);
    ledgerConnection.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
    // The dispatcher's and the reconcile worker's own connections (their workers' commands),
    // made here like every connection of the process; outages are logged by their workers.
    const dispatchConnection = createRedis(redis.url, "worker", "streamkeeper-dispatch");
    const reconcileConnection = createRedis(redis.url, "worker", "streamkeeper-reconcile");
    for (const connection of [dispatchConnection, reconcileConnection]) connection.on("error", (error) => logger.debug({ err: error }, "redis connection error"));
    const freshness: FreshnessRecorder = createFreshnessRecorder({ redis: ledgerConnection, queuePrefix: env.QUEUE_PREFIX, logger });
    const attemptOutbox = archive && createArchiveOutbox(ledgerConnection, env.QUEUE_PREFIX);
    const dispatcherOptions = {
      archive: attemptOutbox && ((record: Parameters<typeof attemptOutbox>[0][number]) => attemptOutbox([record])),
      connection: dispatchConnection,
      queuePrefix: env.QUEUE_PREFIX,
      ledger: createEventLedger(ledgerConnection, env.QUEUE_PREFIX, env.DEDUPE_TTL_SECONDS, env.LEDGER_SHARDS),
      backoffBaseMs: env.DISPATCH_BACKOFF_BASE_MS,
      backoffMaxMs: env.DISPATCH_BACKOFF_MAX_MS,
      retryWindowMs: env.DISPATCH_RETRY_WINDOW_SECONDS * 1000,
      circuit: { failures: env.DISPATCH_CIRCUIT_FAILURES, probeMinMs: env.DISPATCH_CIRCUIT_PROBE_MIN_MS, probeMaxMs: env.DISPATCH_CIRCUIT_PROBE_MAX_MS },
      shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
      lockDurationMs: env.DISPATCH_LOCK_DURATION_MS,
      stalledIntervalMs: env.DISPATCH_LOCK_DURATION_MS,
      telemetry: tracing.bullmq,
      entityVersions: createEntityVersions(ledgerConnection, env.QUEUE_PREFIX, env.DEDUPE_TTL_SECONDS),
      logRepeatsEveryMs,
      // The operator view's freshness and delivery_lag_seconds (docs/operating.md, "Freshness").
      freshness,
    };
    const dispatcher = createDispatcher({ ...dispatcherOptions, routes, logger });
    hurries.push(() => dispatcher.hurry());
    const reconcileOptions = { env, tenant, connection: reconcileConnection, ledger, store, telemetry: tracing.bullmq, serviceName: serviceLabel(serviceConfig) };
    const reconciler = createReconcileWorker({ ...reconcileOptions, logger });
    hurries.push(() => reconciler.hurry());
    // What an earlier release left under its key layout runs through the same processors.
    const earlier = logger.child({ keyLayout: "earlier release" });
    legacyDrain = await drainLegacy({
      route: (name) => createDispatcher({ ...dispatcherOptions, routes: routes.filter((route) => route.name === name), logger: earlier, legacyLayout: true }),
      reconcile: () => createReconcileWorker({ ...reconcileOptions, logger: earlier, legacyLayout: true }),
    });
    // Before the first sweep: an earlier release's checkpoints, kept under the shared tag.
    await adoptLegacySweepState(client, env.QUEUE_PREFIX).then(
      (streams) => streams > 0 && logger.info({ streams }, "sweep checkpoints of the earlier key layout moved to this one"),
      (error: unknown) => logger.warn({ err: error }, "could not move the earlier key layout's sweep checkpoints; a sweep reads the streams it lacks a checkpoint for from RECONCILE_SWEEP_LOOKBACK_SECONDS back, and the next start tries again"),
    );
    // The sweep writes its checkpoints on a connection that waits out a Redis outage, and takes
    // its lease on one that fails fast, so an outage is noticed and said at the next tick.
    const sweepState = createSweepState(tenantConnection, env.QUEUE_PREFIX, { lease: client });
    const sweeper = createSweeper({ env, tenant, reconciler: listReconciler, state: sweepState, logger });
    const unregisterSweepGauges = registerSweepGauges((now) => sweepStatus.describe(lookbackMs, now));
    closers.push(async () => {
      unregisterSweepGauges();
      await Promise.all([dispatcher.close(), reconciler.close(), sweeper.close(), legacyDrain?.close()]);
      await freshness.close();
      await Promise.all([dispatchConnection, reconcileConnection, ledgerConnection].map((connection) => closeRedis(connection)));
    });
    // The tenant's event log, read by one worker of the service (docs/operating.md, Pulling events).
    if (env.PULL === "on" && "client" in tenant && config.tenant) {
      const puller = createPuller({
        state: pullState,
        store,
        tenant: tenant.client,
        apiBaseUrl: config.tenant.apiBaseUrl,
        eventTypes: env.PULL_EVENT_TYPES,
        start: parsePullStart(env.PULL_START)!,
        overlapMs: env.PULL_OVERLAP_SECONDS * 1000,
        failoverMs: env.PULL_FAILOVER_SECONDS * 1000,
        logger,
      });
      closers.push(() => puller.close());
    }
    const scope = sweepScopeOf(env);
    if (env.STREAM_WATCH_INTERVAL_SECONDS > 0 && scope && "client" in tenant) {
      const { client: tenantClient } = tenant;
      const watcher = createStreamWatcher({
        listStreams: () => tenantClient.eventStreams({ take: 100 }),
        enableStream: (streamId) => tenantClient.updateEventStream(streamId, { status: "enabled" }),
        ready,
        scope,
        redis: client,
        queuePrefix: env.QUEUE_PREFIX,
        logger,
        intervalMs: env.STREAM_WATCH_INTERVAL_SECONDS * 1000,
        autoEnable: env.STREAM_AUTO_ENABLE,
        logRepeatsEveryMs,
      });
      closers.push(() => watcher.close());
    }
    // Off otherwise, said once at start by reportWhatIsOff.
  }
  legacyDrain ??= await drainLegacy();

  // The operator view reads on the fail-fast client: the page answers while Redis is away.
  const streamHealth = createStreamHealthStore(client, env.QUEUE_PREFIX, Math.max(1, env.STREAM_WATCH_INTERVAL_SECONDS) * 1000);
  const freshnessReader = reuseRecentReads(createFreshnessReader(client, env.QUEUE_PREFIX));
  // Read once now, so the first page opened finds the day's hours read (docs/benchmarks.md).
  if (env.ADMIN_TOKEN) freshnessReader.read(routes.map((route) => route.name), Date.now()).catch(() => {});
  const overviewDeps = {
    routes,
    sweepPlan: sweepPlan(env, !("unavailable" in tenant)),
    queueFigures: readQueueFigures,
    circuits: readCircuits,
    sweepStatus: (now: number) => sweepStatus.describe(lookbackMs, now),
    streamHealth: () => streamHealth.read(),
    freshness: freshnessReader,
  };
  const adminApp = createAdminApp({
    ready,
    alive: redis.healthy,
    adminToken: env.ADMIN_TOKEN,
    adminPreviousToken: env.ADMIN_PREVIOUS_TOKEN,
    logger,
    describeEvent: (eventId) => (archive ? describeArchivedEvent(eventId, { ledger, queues, archive, logger }) : describeEvent(eventId, { ledger, queues })),
    routers: [
      auditAdminWrites(logger),
      // Shared for a second: several open pages cost one overview (docs/benchmarks.md).
      createOperatorViewRouter(shareRecent(() => describeOverview(overviewDeps), 1000)),
      ...(archive && replayRunner
        ? [
            createArchiveRouter({ archive, logger }),
            createReplayRouter({ replays: createReplays({ pool: archive.pool, routes: routes.map((route) => route.name), retentionDays: archive.retentionDays }), logger, started: replayRunner.wake }),
          ]
        : []),
      createDashboardRouter([...queues.all(), reconcileQueue.queue]),
      createReconcileRouter(reconcileQueue),
      createDeadLettersRouter(() => queues),
      createRoutesRouter({ routes, queues, orphans, forget: (route) => (orphaned.delete(route), routeOrphanedJobs.remove({ route })) }),
      createConfigRouter(serviceConfig),
      // A worker has no receiver, but shares the receivers' explicit credentials (every role reads the same settings).
      createConnectRouter(createStreamConnector({ config, auth: auth ?? ("generated" in config.webhookAuth ? undefined : config.webhookAuth), tenant, logger })),
      createSweepRouter({ describe: () => sweepStatus.describe(lookbackMs, Date.now()), runWindow: createWindowRunner({ env, tenant, reconciler: listReconciler }) }),
      createPullRouter(() => pullState.describe(env.PULL === "on")),
    ],
  });
  admin.attach(adminApp);
  logger.info({ url: admin.url, listening: boundAddress(admin) }, "admin surface (metrics, probes, admin API) listening");

  async function checkEvictionPolicy() {
    try {
      const [, policy] = (await client.config("GET", "maxmemory-policy")) as [string, string];
      if (policy !== "noeviction") {
        logger.warn({ policy }, "Redis maxmemory-policy is not noeviction: Redis may evict queued events under memory pressure; set maxmemory-policy noeviction");
      }
    } catch {
      // Managed Redis often forbids CONFIG: nothing to check then.
    }
  }

  let closing: Promise<void> | undefined;
  return {
    publicUrl: publicServer?.url,
    adminUrl: admin.url,
    close() {
      closing ??= teardown();
      return closing;
    },
    hurry() {
      for (const hurry of hurries) hurry();
    },
  };
}

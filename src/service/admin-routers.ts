import { describeOverview } from "../admin/describe-overview.js";
import { forgetEntityJobs } from "../admin/forget-entity-jobs.js";
import { readCircuits, readQueueFigures } from "../admin/read-overview-gauges.js";
import { shareRecent } from "../admin/share-recent.js";
import type { createReplayRunner } from "../archive/replay-runner.js";
import { createReplays } from "../archive/replays.js";
import { archivedPayload } from "../archive/archived-payload.js";
import { createRouteTrier } from "../routes/try-route.js";
import { createFreshnessReader } from "../freshness/create-freshness-reader.js";
import { createLastHourReader } from "../freshness/read-last-hour.js";
import { reuseRecentReads } from "../freshness/reuse-recent-reads.js";
import { describeArchive } from "../admin/describe-archive.js";
import type { AdminDeps as AdminAppDeps } from "../http/admin-app.js";
import { createArchiveRouter } from "../http/archive-router.js";
import { createSplitArchiveGuard } from "../http/split-archive-guard.js";
import { auditAdminWrites } from "../http/audit-admin-writes.js";
import { createConfigRouter } from "../http/config-router.js";
import { createConnectRouter } from "../http/connect-router.js";
import { createDashboardRouter } from "../http/dashboard-router.js";
import { createDeadLettersRouter } from "../http/dead-letters-router.js";
import { createOperatorViewRouter } from "../http/operator-view-router.js";
import { createPullRouter } from "../http/pull-router.js";
import { createReconcileRouter } from "../http/reconcile-router.js";
import { createReplayRouter } from "../http/replay-router.js";
import { createRoutesRouter } from "../http/routes-router.js";
import { createSweepRouter } from "../http/sweep-router.js";
import { routeOrphanedJobs } from "../metrics/register-orphaned-route-gauges.js";
import type { OrphanedRoutes } from "../queue/orphaned-routes.js";
import { parkWaiting } from "../queue/park-waiting.js";
import { createArchiveOutbox } from "../archive/archive-outbox.js";
import { createStreamConnector } from "../streams/create-stream-connector.js";
import { createStreamHealthStore } from "../streams/stream-health-store.js";
import { sweepPlan } from "../streams/swept-streams.js";
import type { LateServing } from "../http/serve-later.js";
import type { Logger } from "../logging/logger.js";
import type { Config } from "../config/config.js";
import type { RunningArchive } from "../archive/start-archive.js";
import type { Route } from "../routes/route.js";
import type { ServiceConfig } from "../service-config/service-config.js";
import type { ResolvedWebhookAuth } from "../credentials/webhook-credentials.js";
import type { Connections } from "./create-connections.js";
import type { Recovery } from "./create-recovery.js";
import type { Stores } from "./create-stores.js";

export interface AdminDeps {
  config: Config;
  logger: Logger;
  routes: Route[];
  server: LateServing;
  connections: Connections;
  stores: Stores;
  archive?: RunningArchive;
  recovery: Recovery;
  serviceConfig: ServiceConfig;
  /** The receiver's credentials, for a role that receives webhooks. */
  auth?: ResolvedWebhookAuth;
  /** Where the admin token was generated, when ADMIN_TOKEN is unset (admin-token.ts). */
  adminTokenFile?: string;
  ready(): Promise<boolean>;
}

/** Every router of the admin API under /admin, behind the admin login, in the order they are tried. */
export function adminRouters(deps: AdminDeps & { orphans: OrphanedRoutes; orphaned: Set<string>; replayRunner?: ReturnType<typeof createReplayRunner> }): NonNullable<AdminAppDeps["routers"]> {
  const { config, logger, routes, stores, archive, recovery, replayRunner } = deps;
  const { env } = config;
  const { client } = deps.connections;
  const { tenant } = recovery;
  const lookbackMs = env.RECONCILE_SWEEP_LOOKBACK_SECONDS * 1000;
  // The operator view reads on the fail-fast client: the page answers while Redis is away.
  const streamHealth = createStreamHealthStore(client, env.QUEUE_PREFIX, Math.max(1, env.STREAM_WATCH_INTERVAL_SECONDS) * 1000);
  const freshness = reuseRecentReads(createFreshnessReader(client, env.QUEUE_PREFIX));
  // Read once now, so the first page opened finds the day's hours read (docs/benchmarks.md).
  if (env.ADMIN_TOKEN) freshness.read(routes.map((route) => route.name), Date.now()).catch(() => {});
  const overviewDeps = {
    routes,
    sweepPlan: sweepPlan(env, !("unavailable" in tenant)),
    queueFigures: readQueueFigures,
    circuits: readCircuits,
    sweepStatus: (now: number) => stores.sweepState.describe(lookbackMs, now),
    streamHealth: () => streamHealth.read(),
    freshness,
    lastHour: createLastHourReader(client, env.QUEUE_PREFIX),
    pull: () => stores.pullState.describe(env.PULL === "on", 0),
    archive: () => describeArchive(archive, client, env),
    removedRoutes: () => Promise.all([...deps.orphaned].map(async (name) => ({ name, waiting: await deps.orphans.count(name) }))),
  };
  const queues = [...stores.queues.all(), stores.reconcileQueue.queue];
  // Parked events go where every outcome goes: the archive's outbox (none with ARCHIVE=off).
  const parkOutbox = archive && createArchiveOutbox(client, env.QUEUE_PREFIX);
  return [
    auditAdminWrites(logger),
    // Shared for a second: several open pages cost one overview (docs/benchmarks.md).
    createOperatorViewRouter(shareRecent(() => describeOverview(overviewDeps), 1000)),
    ...(archive && replayRunner
      ? [
          createSplitArchiveGuard(archive.writer.refusedBy),
          createArchiveRouter({ archive, logger, forgetJobs: (entity) => forgetEntityJobs(stores.queues, entity) }),
          createReplayRouter({ replays: createReplays({ pool: archive.pool, routes: routes.map((route) => route.name), retentionDays: archive.retentionDays }), logger, started: replayRunner.wake }),
        ]
      : []),
    createDashboardRouter(queues),
    createReconcileRouter(stores.reconcileQueue),
    createDeadLettersRouter(() => stores.queues),
    createRoutesRouter({
      routes,
      queues: stores.queues,
      orphans: deps.orphans,
      forget: (route) => (deps.orphaned.delete(route), routeOrphanedJobs.remove({ route })),
      park: parkOutbox && ((route, before) => parkWaiting(stores.queues.forRoute(route), route, before, { archive: parkOutbox, logger })),
      tryRoute: createRouteTrier(routes, env.TRANSFORM_TIMEOUT_MS),
      archivedEvent: archive && ((eventId) => archivedPayload(archive.pool, eventId)),
    }),
    createConfigRouter(deps.serviceConfig),
    // A worker has no receiver, but shares the receivers' explicit credentials (every role reads the same settings).
    createConnectRouter(createStreamConnector({ config, auth: deps.auth ?? ("generated" in config.webhookAuth ? undefined : config.webhookAuth), tenant, logger })),
    createSweepRouter({ describe: () => stores.sweepState.describe(lookbackMs, Date.now()), runWindow: recovery.runWindow }),
    createPullRouter((poisonShown) => stores.pullState.describe(env.PULL === "on", poisonShown)),
  ];
}

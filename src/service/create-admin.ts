import { describeArchivedEvent } from "../admin/describe-archived-event.js";
import { describeEvent } from "../admin/describe-event.js";
import { archivedThrough, createArchiveOutbox } from "../archive/archive-outbox.js";
import { createReplayRunner } from "../archive/replay-runner.js";
import { waitingPerRoute } from "../admin/read-overview-gauges.js";
import { startWaitingSampler } from "../freshness/create-waiting-sampler.js";
import { createAdminApp } from "../http/admin-app.js";
import { boundAddress } from "../http/bound-address.js";
import { registerOrphanedRouteGauges } from "../metrics/register-orphaned-route-gauges.js";
import { registerQueueGauges } from "../metrics/register-queue-gauges.js";
import { registerRedisGauges } from "../metrics/register-redis-gauges.js";
import { createOrphanedRoutes } from "../queue/orphaned-routes.js";
import { circuitKey, routeOfQueue } from "../queue/queue-names.js";
import { reportOrphanedRoutes } from "../queue/report-orphaned-routes.js";
import { adminRouters, type AdminDeps } from "./admin-routers.js";
import { createRouteChooser } from "../routes/route-chooser.js";
import type { Route } from "../routes/route.js";
import { closeInOrder } from "./close-in-order.js";

/**
 * The admin surface on its bound port, for every role: metrics, probes, the admin API and
 * the dashboards, reading on the fail-fast client so they answer while Redis is away; and
 * the replays it starts.
 */
export async function createAdmin(deps: AdminDeps): Promise<{ close(): Promise<void> }> {
  const { config, logger, routes, connections, stores, archive } = deps;
  const { env } = config;
  const { client } = connections;
  // Routes renamed or removed whose events still wait (docs/operating.md, Removing a route).
  const orphans = createOrphanedRoutes(client, env.QUEUE_PREFIX, routes.map((route) => route.name), archive && createArchiveOutbox(client, env.QUEUE_PREFIX));
  const orphaned = new Set(connections.reachable ? await reportOrphanedRoutes(orphans, logger) : []);
  const unregisterGauges = [
    registerOrphanedRouteGauges(() => [...orphaned], orphans.count, (route) => orphaned.delete(route)),
    registerQueueGauges(client, () => [...stores.queues.all(), stores.reconcileQueue.queue], routeOfQueue),
    registerRedisGauges(client, new Map(routes.map((route) => [route.name, circuitKey(env.QUEUE_PREFIX, route.name)]))),
  ];
  // The operator view's last-hour charts of waiting events (docs/operating.md, "The operator view").
  const waitingSampler = startWaitingSampler({ redis: client, queuePrefix: env.QUEUE_PREFIX, logger, read: () => waitingPerRoute(routes.map((route) => route.name)) });
  // While this process's database is not the outbox's (a split archive), its replays wait: the
  // outbox's progress says nothing of what this database holds.
  const replayRunner =
    archive && createReplayRunner({ pool: archive.pool, queues: stores.queues, logger, selects: replaySelects(routes), archivedThrough: () => (archive.writer.refusedBy() ? Promise.resolve(0) : archivedThrough(client, env.QUEUE_PREFIX)) });
  const app = createAdminApp({
    ready: deps.ready,
    alive: connections.redis.healthy,
    adminToken: env.ADMIN_TOKEN,
    adminPreviousToken: env.ADMIN_PREVIOUS_TOKEN,
    logger,
    describeEvent: (eventId) => (archive ? describeArchivedEvent(eventId, { ledger: stores.ledger, queues: stores.queues, archive, logger }) : describeEvent(eventId, { ledger: stores.ledger, queues: stores.queues })),
    routers: adminRouters({ ...deps, orphans, orphaned, replayRunner }),
  });
  deps.server.attach(app);
  logger.info({ url: deps.server.url, listening: boundAddress(deps.server) }, "admin surface (metrics, probes, admin API) listening");
  // Where the login is, never the token itself.
  const login = deps.adminTokenFile ? `the token in ${deps.adminTokenFile}` : "ADMIN_TOKEN";
  logger.info({ url: `${deps.server.url}/admin/`, tokenFile: deps.adminTokenFile }, `operator view at ${deps.server.url}/admin/: log in with any user name and ${login} as the password`);
  return {
    close: () =>
      closeInOrder([
        () => waitingSampler.close(),
        async () => unregisterGauges.forEach((unregister) => unregister()),
        () => orphans.close(),
        () => deps.server.close(env.SHUTDOWN_TIMEOUT_MS),
        replayRunner && (() => replayRunner.close()),
      ]),
  };
}

/** A replay goes through its route as configured now: its match, filter and testEvents (routes/route-chooser.ts). */
function replaySelects(routes: Route[]) {
  const chooser = createRouteChooser(routes);
  return (route: string, event: { type: string }) => chooser.choose(route, event)?.deliver ?? true;
}

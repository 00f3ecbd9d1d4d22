import { describeHealth } from "./describe-health.js";
import { waitingOf, type ArchiveOverview, type FreshnessVerdict, type Overview, type PullOverview, type QueueFigures, type RouteOverview, type StreamOverview } from "./overview.js";
import { deliveryQueueName, reconcileQueueName } from "../queue/queue-names.js";
import type { Route } from "../routes/route.js";
import type { StreamHealth } from "../streams/stream-health-store.js";
import type { SweepPlan } from "../streams/swept-streams.js";
import type { StreamSweepStatus } from "../sweep/create-sweep-state.js";
import type { FreshnessReader, FreshnessWindow } from "../freshness/create-freshness-reader.js";
import type { LastHour } from "../freshness/read-last-hour.js";

export type { ArchiveOverview, FreshnessVerdict, Overview, QueueFigures, RouteOverview, StreamOverview } from "./overview.js";

export interface OverviewDeps {
  routes: Route[];
  sweepPlan: SweepPlan;
  /** Every queue's figures by queue name (delivery queues and the reconcile queue). */
  queueFigures(): Promise<Map<string, QueueFigures>>;
  /** Route name → whether its circuit is open. */
  circuits(): Promise<Map<string, boolean>>;
  sweepStatus(now: number): Promise<StreamSweepStatus[]>;
  streamHealth(): Promise<Map<string, StreamHealth>>;
  freshness: FreshnessReader;
  /** Each route's last hour, minute by minute (read-last-hour.ts). */
  lastHour(routes: string[], now: number): Promise<Map<string, LastHour>>;
  pull(): Promise<PullOverview>;
  archive(): Promise<ArchiveOverview>;
  /** Routes no longer configured whose events still wait (docs/operating.md, Removing a route). */
  removedRoutes(): Promise<Array<{ name: string; waiting: number }>>;
}

/** Why the sweep is off, in words the page shows as they are. */
const whyOffWords: Record<string, string> = {
  no_tenant: "the tenant's API settings are missing (TENANT_DOMAIN or MGMT_API_BASE_URL, MGMT_CLIENT_ID, MGMT_CLIENT_SECRET)",
  no_sweep: "neither RECONCILE_SWEEP_STREAMS nor PUBLIC_URL is set",
  sweep_off: "RECONCILE_SWEEP_INTERVAL_SECONDS is 0",
};

/**
 * The operator view's one aggregate (`GET /admin/overview`, docs/operating.md "Operator
 * view"): streams, routes and recovery from what the service already keeps, read in a few
 * pipelined round trips whatever the number of routes or events: queue and circuit gauges
 * (one shared read, as a scrape does), the sweep's and the stream watch's state, and the
 * freshness sketch. No per-event scan. A part Redis cannot give now is listed in
 * `unavailable` and shown as unknown.
 */
export async function describeOverview(deps: OverviewDeps, now = Date.now()): Promise<Overview> {
  const unavailable: string[] = [];
  const part = <T>(name: string, read: () => Promise<T>): Promise<T | undefined> =>
    read().catch(() => (unavailable.push(name), undefined));
  const names = deps.routes.map((route) => route.name);
  const [queues, circuits, sweep, health, activity, lastHour, pull, archive, removedRoutes] = await Promise.all([
    part("queues", deps.queueFigures),
    part("circuits", deps.circuits),
    part("sweep", () => deps.sweepStatus(now)),
    part("streams", deps.streamHealth),
    part("freshness", () => deps.freshness.read(names, now)),
    part("charts", () => deps.lastHour(names, now)),
    part("pull", deps.pull),
    part("archive", deps.archive),
    part("removed routes", deps.removedRoutes),
  ]);

  const routes = deps.routes.map((route): RouteOverview => {
    const queue = queues?.get(deliveryQueueName(route.name));
    const act = activity?.get(route.name);
    const objective = route.freshnessSeconds ?? null;
    const judged = (window: FreshnessWindow) => ({ ...window, verdict: verdict(window, objective) });
    return {
      name: route.name,
      match: route.match,
      ratePerSecond: route.ratePerSecond ?? null,
      filter: route.filter ?? null,
      testEvents: route.testEvents ?? "deliver",
      transform: route.transform ?? null,
      deliveredPerMinute: act?.deliveredPerMinute ?? null,
      backlog: queue ? queue.waiting + queue.prioritized + queue.delayed + queue.active : null,
      lanes: queue ? { live: queue.waiting, late: queue.prioritized } : null,
      oldestWaitingSeconds: queue?.oldestWaitingSeconds ?? null,
      circuit: circuits?.has(route.name) ? (circuits.get(route.name) ? "open" : "closed") : null,
      deadLetters: queue?.failed ?? null,
      staleLastDay: act?.staleLastDay ?? null,
      freshness: { objectiveSeconds: objective, last5m: act ? judged(act.last5m) : null, lastDay: act ? judged(act.lastDay) : null },
      lastHour: withWaitingNow(lastHour?.get(route.name), queue),
    };
  });

  const swept = new Map((sweep ?? []).map((status) => [status.streamId, status]));
  const ids = [...new Set([...swept.keys(), ...(health?.keys() ?? [])])].sort();
  const streams = ids.map((streamId): StreamOverview => {
    const status = swept.get(streamId);
    const found = health?.get(streamId);
    const checkpoint = status?.checkpoint ? Date.parse(status.checkpoint) : undefined;
    return {
      streamId,
      status: found?.status ?? null,
      checkedAt: found ? new Date(found.checkedAt).toISOString() : null,
      sweepLagSeconds: checkpoint === undefined ? null : Math.max(0, Math.round((now - checkpoint) / 1000)),
      lastRunAt: status?.lastRunAt ?? null,
      lastError: status?.lastError ?? null,
      found: status?.found ?? null,
      recovered: status?.recovered ?? null,
      unrecovered: status?.unrecovered ?? null,
    };
  });

  const reconcile = queues?.get(reconcileQueueName);
  const plan = deps.sweepPlan;
  const seen = { routes, streams, pull: pull ?? null, archive: archive ?? null, removedRoutes: removedRoutes ?? null, unavailable };
  return {
    generatedAt: new Date(now).toISOString(),
    health: describeHealth(seen),
    pull: seen.pull,
    archive: seen.archive,
    removedRoutes: seen.removedRoutes,
    sweep: {
      on: plan.on,
      whyOff: plan.on ? null : whyOffWords[plan.whyOff] ?? plan.whyOff,
      streams: plan.scope?.streamIds ?? null,
      publicUrl: plan.scope?.publicUrl ?? null,
    },
    streams,
    routes,
    recovery: {
      reconcile: reconcile
        ? { waiting: reconcile.waiting + reconcile.prioritized, delayed: reconcile.delayed, active: reconcile.active, failed: reconcile.failed, oldestWaitingSeconds: reconcile.oldestWaitingSeconds }
        : null,
    },
    unavailable,
  };
}

/** The chart's current minute shows the events waiting now, not the minute's last sample (up to 10 s old). */
function withWaitingNow(hour: LastHour | undefined, queue: QueueFigures | undefined): LastHour | null {
  if (!hour) return null;
  if (!queue) return hour;
  return { ...hour, waiting: { all: [...hour.waiting.all.slice(0, -1), waitingOf(queue)] } };
}

function verdict(window: FreshnessWindow, objective: number | null): FreshnessVerdict {
  if (objective === null) return "no_objective";
  if (window.count === 0) return "no_events";
  return window.missed > window.count * 0.01 ? "missed" : "met";
}

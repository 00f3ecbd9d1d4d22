import type { FreshnessReader, FreshnessWindow } from "../freshness/create-freshness-reader.js";
import { deliveryQueueName, reconcileQueueName } from "../queue/queue-names.js";
import type { Route } from "../routes/route.js";
import type { StreamHealth } from "../streams/stream-health-store.js";
import type { SweepPlan } from "../streams/swept-streams.js";
import type { StreamSweepStatus } from "../sweep/create-sweep-state.js";

/** One queue's figures, as `streamkeeper_queue_jobs` and `_oldest_waiting_age_seconds` read them. */
export interface QueueFigures {
  waiting: number;
  prioritized: number;
  delayed: number;
  active: number;
  failed: number;
  oldestWaitingSeconds: number;
}

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
}

/** `met`: at most 1% of live events later than the objective; `missed`: more. */
export type FreshnessVerdict = "met" | "missed" | "no_objective" | "no_events";

export interface RouteOverview {
  name: string;
  match: string[];
  ratePerSecond: number | null;
  /** what the route chooses and how it shapes the body (docs/routes.md): null where it has none */
  filter: Record<string, unknown> | null;
  testEvents: "deliver" | "drop";
  transform: string | null;
  deliveredPerMinute: number | null;
  /** jobs waiting, prioritized (recoveries, replays), delayed (retries) or in flight */
  backlog: number | null;
  oldestWaitingSeconds: number | null;
  circuit: "open" | "closed" | null;
  deadLetters: number | null;
  staleLastDay: number | null;
  freshness: {
    objectiveSeconds: number | null;
    last5m: (FreshnessWindow & { verdict: FreshnessVerdict }) | null;
    lastDay: (FreshnessWindow & { verdict: FreshnessVerdict }) | null;
  };
}

export interface StreamOverview {
  streamId: string;
  /** as last read from the tenant by the stream watch; null when not read (no watch, or not yet) */
  status: "enabled" | "disabled" | null;
  checkedAt: string | null;
  /** now minus the end of the last window the sweep read completely */
  sweepLagSeconds: number | null;
  lastRunAt: string | null;
  lastError: string | null;
  found: number | null;
  recovered: number | null;
  unrecovered: number | null;
}

export interface Overview {
  generatedAt: string;
  sweep: { on: boolean; whyOff: string | null; streams: string[] | null; publicUrl: string | null };
  streams: StreamOverview[];
  routes: RouteOverview[];
  recovery: { reconcile: Omit<QueueFigures, "prioritized"> | null };
  /** the parts that could not be read now (Redis away): shown as unknown, not as zero */
  unavailable: string[];
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
  const [queues, circuits, sweep, health, activity] = await Promise.all([
    part("queues", deps.queueFigures),
    part("circuits", deps.circuits),
    part("sweep", () => deps.sweepStatus(now)),
    part("streams", deps.streamHealth),
    part("freshness", () => deps.freshness.read(deps.routes.map((route) => route.name), now)),
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
      oldestWaitingSeconds: queue?.oldestWaitingSeconds ?? null,
      circuit: circuits?.has(route.name) ? (circuits.get(route.name) ? "open" : "closed") : null,
      deadLetters: queue?.failed ?? null,
      staleLastDay: act?.staleLastDay ?? null,
      freshness: { objectiveSeconds: objective, last5m: act ? judged(act.last5m) : null, lastDay: act ? judged(act.lastDay) : null },
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
  return {
    generatedAt: new Date(now).toISOString(),
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

function verdict(window: FreshnessWindow, objective: number | null): FreshnessVerdict {
  if (objective === null) return "no_objective";
  if (window.count === 0) return "no_events";
  return window.missed > window.count * 0.01 ? "missed" : "met";
}

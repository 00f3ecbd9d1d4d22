import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { tenantConfigured, type Config } from "../config/config.js";
import type { Route } from "../routes/route.js";
import { sweepPlan, type SweepPlan } from "../streams/swept-streams.js";
import { version } from "../process/version.js";

/**
 * A route as the service publishes it: no headers' values, no secret, and of its URL only
 * the origin (a path or query may hold a secret: a Slack-style /services/T/B/<secret>,
 * ?token=). `urlFingerprint` tells whether two URLs are the same without showing either.
 */
export type PublishedRoute = Pick<Route, "name" | "match" | "url" | "timeoutMs" | "maxAttemptsPerEvent" | "concurrency"> & { urlFingerprint: string };

/**
 * The effective non-secret configuration of a running service, written to
 * Redis at start and served at GET /admin/config, so commands act with the service's
 * routes and scope instead of whatever their own shell holds.
 */
export interface ServiceConfig {
  version: string;
  role: "all" | "receiver" | "worker";
  pid: number;
  host: string;
  startedAt: string;
  queuePrefix: string;
  routes: PublishedRoute[];
  /** The tenant's API settings are complete: reconcile can run. */
  tenantConfigured: boolean;
  /** PUBLIC_URL, where the tenant reaches this service. */
  publicUrl: string | null;
  /** The sweep's scope (RECONCILE_SWEEP_STREAMS, else the streams pointing at PUBLIC_URL); `configured` false: no sweep (sweepPlan's `on`). */
  sweep: { configured: boolean; streamIds: string[] | null; publicUrl: string | null; intervalSeconds: number };
}

/** "the service (role all, pid 4242 on host-1)": how messages name the process that answered. */
export function serviceLabel(config: Pick<ServiceConfig, "role" | "pid" | "host">): string {
  return `the service (role ${config.role}, pid ${config.pid} on ${config.host})`;
}

export function describeServiceConfig(config: Config, routes: Route[], role: ServiceConfig["role"]): ServiceConfig {
  const { env } = config;
  const tenant = tenantConfigured(config);
  const plan = sweepPlan(env, tenant);
  const { scope } = plan;
  return {
    version,
    role,
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    queuePrefix: env.QUEUE_PREFIX,
    routes: routes.map(publishedRoute),
    tenantConfigured: tenant,
    publicUrl: env.PUBLIC_URL ?? null,
    sweep: {
      configured: plan.on,
      streamIds: scope?.streamIds ?? null,
      publicUrl: scope?.publicUrl ?? null,
      intervalSeconds: env.RECONCILE_SWEEP_INTERVAL_SECONDS,
    },
  };
}

/** The sweep plan of a running service, from what it published (a command asks the service, not its own shell). */
export function publishedSweepPlan(config: Pick<ServiceConfig, "sweep" | "tenantConfigured">): SweepPlan {
  const { sweep } = config;
  return sweepPlan({ RECONCILE_SWEEP_STREAMS: sweep.streamIds ?? undefined, PUBLIC_URL: sweep.publicUrl ?? undefined, RECONCILE_SWEEP_INTERVAL_SECONDS: sweep.intervalSeconds }, config.tenantConfigured);
}

export function publishedRoute(route: Route): PublishedRoute {
  return {
    name: route.name,
    match: route.match,
    // Never the user info, path or query: any of them may be the secret.
    url: new URL(route.url).origin,
    urlFingerprint: urlFingerprint(route.url),
    timeoutMs: route.timeoutMs,
    maxAttemptsPerEvent: route.maxAttemptsPerEvent,
    concurrency: route.concurrency,
  };
}

/** A hash of the full URL (credentials, path and query included): equal URLs, equal fingerprints. */
export function urlFingerprint(url: string): string {
  return createHash("sha256").update(new URL(url).toString()).digest("hex").slice(0, 16);
}

/** A published route as a Route to queue jobs for (queues need name, match and attempts; delivering is the service's). */
export function routeOf({ urlFingerprint: _, ...published }: PublishedRoute): Route {
  return { ...published, headers: {} };
}

import { hostname } from "node:os";
import type { Config } from "../config.js";
import type { Route } from "../routes/route.js";
import { sweepScopeOf } from "../streams/swept-streams.js";
import { version } from "../version.js";

/** A route as the service publishes it: no headers' values, no secret, no credentials in the URL. */
export type PublishedRoute = Pick<Route, "name" | "match" | "url" | "timeoutMs" | "maxAttemptsPerEvent" | "concurrency">;

/**
 * The effective non-secret configuration of a running service (issue 18), written to
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
  /** The sweep's scope (RECONCILE_SWEEP_STREAMS, else the streams pointing at PUBLIC_URL); `configured` false: no sweep. */
  sweep: { configured: boolean; streamIds: string[] | null; publicUrl: string | null; intervalSeconds: number };
}

/** "the service (role all, pid 4242 on host-1)": how messages name the process that answered. */
export function serviceLabel(config: Pick<ServiceConfig, "role" | "pid" | "host">): string {
  return `the service (role ${config.role}, pid ${config.pid} on ${config.host})`;
}

export function describeServiceConfig(config: Config, routes: Route[], role: ServiceConfig["role"]): ServiceConfig {
  const { env } = config;
  const scope = sweepScopeOf(env);
  return {
    version,
    role,
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    queuePrefix: env.QUEUE_PREFIX,
    routes: routes.map((route) => ({
      name: route.name,
      match: route.match,
      url: withoutCredentials(route.url),
      timeoutMs: route.timeoutMs,
      maxAttemptsPerEvent: route.maxAttemptsPerEvent,
      concurrency: route.concurrency,
    })),
    tenantConfigured: Boolean(config.tenant?.clientId && config.tenant.clientSecret),
    publicUrl: env.PUBLIC_URL ?? null,
    sweep: {
      configured: scope !== undefined && env.RECONCILE_SWEEP_INTERVAL_SECONDS > 0,
      streamIds: scope?.streamIds ?? null,
      publicUrl: scope?.publicUrl ?? null,
      intervalSeconds: env.RECONCILE_SWEEP_INTERVAL_SECONDS,
    },
  };
}

/** A route URL may carry user info (https://user:pass@host): never published. */
export function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return url;
  parsed.username = "";
  parsed.password = "";
  return parsed.toString();
}

/** A published route as a Route to queue jobs for (queues need name, match and attempts; delivering is the service's). */
export function routeOf(published: PublishedRoute): Route {
  return { ...published, headers: {} };
}

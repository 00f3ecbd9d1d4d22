import type { Cluster, Redis } from "ioredis";
import { ConfigError, requireTenant, type Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { reconcilePaceKey } from "../queue/queue-names.js";
import { createTenantClient, type TenantClient } from "../tenant/create-tenant-client.js";
import { createCallPacer } from "./create-call-pacer.js";
import { createPaceReporter } from "./create-pace-reporter.js";
import { pacedFetch } from "./paced-fetch.js";

/** The tenant client every background caller shares, or why there is none (the settings to add). */
export type PacedTenant = { client: TenantClient } | { unavailable: string };

export interface PacedTenantOptions {
  /** The tenant settings, QUEUE_PREFIX, RECONCILE_RATE_SHARE and RECONCILE_RATE_PER_SECOND. */
  config: Config;
  /** Holds the shared pace; a connection that waits out a Redis outage (a `worker` connection). */
  redis: Redis | Cluster;
  logger: Logger;
}

/**
 * The one tenant client of a process for everything the service does by itself (reconcile
 * jobs, the sweep, the stream watcher), built once by the composition root. Every call it
 * makes, in every process, goes through one pace kept in Redis that follows what the tenant's
 * answers show (docs/operating.md, "How the recovery pace works"): up to RECONCILE_RATE_SHARE
 * of its bucket, its quota for our client, or RECONCILE_RATE_PER_SECOND, whichever is
 * tightest; cut when room shrinks or on a 429, held until the tenant refills (paced-fetch.ts).
 */
export function createPacedTenant(options: PacedTenantOptions): PacedTenant {
  const { config, logger } = options;
  let tenant;
  try {
    tenant = requireTenant(config);
  } catch (error) {
    if (error instanceof ConfigError) return { unavailable: error.message };
    throw error;
  }
  const { env } = config;
  const pacer = createCallPacer(options.redis, reconcilePaceKey(env.QUEUE_PREFIX), { capPerSecond: env.RECONCILE_RATE_PER_SECOND });
  const reporter = createPaceReporter(logger);
  const fetch = pacedFetch({
    pacer,
    share: env.RECONCILE_RATE_SHARE,
    capPerSecond: env.RECONCILE_RATE_PER_SECOND,
    apiBaseUrl: tenant.apiBaseUrl,
    onHold: reporter.onHold,
    onPace: reporter.onPace,
  });
  return { client: createTenantClient({ ...tenant, logger, fetch, beforeRequest: () => pacer.take() }) };
}

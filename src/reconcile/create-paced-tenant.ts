import type { Cluster, Redis } from "ioredis";
import { ConfigError, requireTenant, type Config } from "../config.js";
import type { Logger } from "../logger.js";
import { reconcilePaceKey } from "../queue/queue-names.js";
import { createTenantClient, type TenantClient } from "../tenant/create-tenant-client.js";
import { createCallPacer } from "./create-call-pacer.js";
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
 * makes, in every process, goes through one pace kept in Redis: at most RECONCILE_RATE_SHARE
 * of the tenant's refill rate, as its `X-RateLimit-*` headers show it (create-refill-estimate.ts), capped by
 * RECONCILE_RATE_PER_SECOND when set, and held on a 429 or an empty bucket (paced-fetch.ts).
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
  const pacer = createCallPacer(options.redis, reconcilePaceKey(env.QUEUE_PREFIX), {
    share: env.RECONCILE_RATE_SHARE,
    capPerSecond: env.RECONCILE_RATE_PER_SECOND,
  });
  const fetch = pacedFetch({
    pacer,
    share: env.RECONCILE_RATE_SHARE,
    apiBaseUrl: tenant.apiBaseUrl,
    // A 429 or an empty bucket is worth a warning; the short waits that leave other clients their part are routine.
    onHold: (ms) =>
      ms >= 1000
        ? logger.warn({ holdMs: ms }, "tenant rate limit reached; holding our tenant calls until its reset")
        : logger.debug({ holdMs: ms }, "the tenant's bucket is below the other clients' part; waiting for it to refill"),
  });
  return { client: createTenantClient({ ...tenant, logger, fetch }) };
}

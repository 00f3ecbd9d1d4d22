import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { createPuller } from "../pull/create-puller.js";
import { parsePullStart } from "../pull/pull-start.js";
import type { RedisClient } from "../redis/redis-connection.js";
import type { PacedTenant } from "../pace/create-paced-tenant.js";
import type { Reconciler } from "../reconcile/create-reconciler.js";
import { createStreamWatcher } from "../streams/create-stream-watcher.js";
import { sweepScopeOf } from "../streams/swept-streams.js";
import { createSweeper } from "../sweep/create-sweeper.js";
import { registerSweepGauges } from "../sweep/register-sweep-gauges.js";
import { closeInOrder } from "./close-in-order.js";
import type { Stores } from "./create-stores.js";

/**
 * What finds lost events with no one asking, in a worker role: the sweep of the tenant's
 * failed deliveries, the stream watch (a disabled stream loses data) and the pull of the
 * tenant's event log. Each is off when its settings say so, said once at start
 * (service-config/report-what-is-off.ts).
 */
export function startFinders(deps: { config: Config; logger: Logger; tenant: PacedTenant; reconciler: Reconciler; client: RedisClient; stores: Stores; ready(): Promise<boolean> }): { close(): Promise<void> } {
  const { config, logger, tenant, stores } = deps;
  const { env } = config;
  const sweeper = createSweeper({ env, tenant, reconciler: deps.reconciler, state: stores.sweepState, arrived: (eventId) => stores.ledger.has(eventId), logger });
  const unregisterSweepGauges = registerSweepGauges((now) => stores.sweepState.describe(env.RECONCILE_SWEEP_LOOKBACK_SECONDS * 1000, now));
  const closers: Array<() => Promise<void>> = [() => sweeper.close()];
  // The tenant's event log, read by one worker of the service (docs/operating.md, Pulling events).
  if (env.PULL === "on" && "client" in tenant && config.tenant) {
    const puller = createPuller({
      state: stores.pullState,
      store: stores.store,
      tenant: tenant.client,
      apiBaseUrl: config.tenant.apiBaseUrl,
      eventTypes: env.PULL_EVENT_TYPES,
      start: parsePullStart(env.PULL_START)!,
      overlapMs: env.PULL_OVERLAP_SECONDS * 1000,
      maxMessageBytes: env.WEBHOOK_MAX_BODY_BYTES,
      dedupeTtlMs: env.DEDUPE_TTL_SECONDS * 1000,
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
      ready: deps.ready,
      scope,
      redis: deps.client,
      queuePrefix: env.QUEUE_PREFIX,
      logger,
      intervalMs: env.STREAM_WATCH_INTERVAL_SECONDS * 1000,
      autoEnable: env.STREAM_AUTO_ENABLE,
      logRepeatsEveryMs: env.LOG_REPEAT_INTERVAL_SECONDS * 1000,
    });
    closers.push(() => watcher.close());
  }
  return { close: () => closeInOrder([async () => unregisterSweepGauges(), () => Promise.all(closers.map((close) => close()))]) };
}

import type { Logger } from "../logging/logger.js";
import type { RedisClient } from "../redis/redis-connection.js";
import type { Route } from "../routes/route.js";
import { adoptLegacySweepState } from "./adopt-legacy-sweep-state.js";
import { drainLegacyLayout, type Closable } from "./drain-legacy-layout.js";
import { legacyBullPrefix } from "./legacy-queue-layout.js";

/** The processors of a worker role, run on other queues: the same delivery and reconcile as this layout's. */
export interface Drainers {
  dispatcherFor(routes: Route[], logger: Logger, options: { drainPrefix: string }): Closable;
  reconcileWorkerFor(logger: Logger, options: { drainPrefix: string }): Closable;
}

export interface Upgrade {
  /** An earlier release's sweep checkpoints, moved under the sweep's own hash tag: before the first sweep. Never fails the start. */
  adoptSweepState(): Promise<void>;
  /** Starts the drain of the earlier layout's queues (a worker role, given its processors), or only reports what is left there; resolves after the first look. */
  drain(drainers?: Drainers): Promise<void>;
  close(): Promise<void>;
  /** During close(): the drain's workers stop waiting for jobs in flight (a second signal). */
  hurry(): void;
}

/**
 * Everything about the key layout of a release before per-queue hash tags (docs/deploy.md,
 * Upgrading), in one place: a release that no longer needs it deletes this folder and
 * the calls of this builder.
 */
export function createUpgrade(deps: { queuePrefix: string; logger: Logger; routes: Route[]; client: RedisClient }): Upgrade {
  const { queuePrefix, logger, routes, client } = deps;
  let drain: Closable | undefined;
  return {
    adoptSweepState: () =>
      adoptLegacySweepState(client, queuePrefix).then(
        (streams) => void (streams > 0 && logger.info({ streams }, "sweep checkpoints of the earlier key layout moved to this one")),
        (error: unknown) => logger.warn({ err: error }, "could not move the earlier key layout's sweep checkpoints; a sweep reads the streams it lacks a checkpoint for from RECONCILE_SWEEP_LOOKBACK_SECONDS back, and the next start tries again"),
      ),
    async drain(drainers) {
      // What an earlier release left under its key layout runs through the same processors.
      const earlier = logger.child({ keyLayout: "earlier release" });
      const drainPrefix = legacyBullPrefix(queuePrefix);
      drain = await drainLegacyLayout({
        redis: client,
        queuePrefix,
        routes: routes.map((route) => route.name),
        logger,
        drain: drainers && {
          route: (name) => drainers.dispatcherFor(routes.filter((route) => route.name === name), earlier, { drainPrefix }),
          reconcile: () => drainers.reconcileWorkerFor(earlier, { drainPrefix }),
        },
      });
    },
    close: async () => drain?.close(),
    hurry: () => drain?.hurry(),
  };
}

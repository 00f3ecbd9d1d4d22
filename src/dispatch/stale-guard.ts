import { randomUUID } from "node:crypto";
import { DelayedError, type Job } from "bullmq";
import type { Logger } from "../logging/logger.js";
import { dispatchEntityLeaseExpired, dispatchEntityWaits, dispatchTotal } from "../metrics/registry.js";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { EntityVersions } from "../queue/entity-versions.js";
import type { EventLedger } from "../queue/event-ledger.js";
import { entityVersionOf } from "../events/entity-version.js";
import type { AttemptResult } from "./retry-policy.js";
import type { Route } from "../routes/route.js";

export interface StaleGuardDeps {
  route: Route;
  versions: EntityVersions;
  ledger: EventLedger;
  logger: Logger;
}

/** Sends one attempt through the guard: the attempt's result, or `stale` when the route already has a newer state. */
export type StaleGuard = (
  job: Job<DeliveryJobData>,
  token: string | undefined,
  context: Record<string, unknown>,
  send: () => Promise<AttemptResult>,
) => Promise<AttemptResult | "stale">;

/**
 * `dropStale` (README.md#routes): each attempt about an entity runs
 * inside the (route, entity) lease: compare with the newest state the route has, POST,
 * record, give the lease back. Events about no entity go straight through.
 */
export function createStaleGuard({ route, versions, ledger, logger }: StaleGuardDeps): StaleGuard {
  const labels = { route: route.name };
  // The lease outlives the POST (bounded by timeoutMs) with room for a slow event loop or
  // Redis, so two states never overlap; yet a crashed holder frees its entity within about
  // two timeouts (21 s by default, before BullMQ's 30 s lock hands its job to another worker).
  const leaseMs = 2 * route.timeoutMs + 1000;
  // How long deliveries of this route take, smoothed: how long a waiter waits at first.
  let typicalMs = 20;

  return async (job, token, context, send) => {
    const version = entityVersionOf(job.data.event);
    if (!version) return send();
    const owner = randomUUID();
    const entry = await versions.enter(route.name, version, owner, leaseMs);

    if (entry.outcome === "stale") {
      const at = Date.now();
      dispatchTotal.inc({ ...labels, outcome: "stale" });
      ledger.markStale(job.data.event.id, route.name, at).catch((error: unknown) =>
        logger.warn({ ...context, err: error }, "skipped as stale, but recording it failed; GET /admin/events shows the job's state while it is kept"),
      );
      logger.info({ ...context, entity: version.entity, age: new Date(version.age).toISOString() }, "event older than the state this route already has (dropStale); skipped as stale");
      return "stale";
    }

    if (entry.outcome === "busy") {
      // Wait about as long as the holder has been at it, at least a typical delivery,
      // never past its lease: quick turns behind a fast downstream, fewer and fewer
      // behind a slow or crashed one. Not an attempt: the job goes back delayed.
      const heldMs = leaseMs - entry.leaseLeftMs;
      const waitMs = Math.round(Math.min(entry.leaseLeftMs, Math.max(typicalMs, heldMs, 5)) * (0.5 + Math.random()));
      dispatchEntityWaits.inc(labels);
      if (logger.isLevelEnabled("debug")) logger.debug({ ...context, entity: version.entity, waitMs }, "another delivery of this entity is in flight; waiting for it");
      await job.moveToDelayed(Date.now() + waitMs, token);
      throw new DelayedError();
    }

    const started = performance.now();
    const result = await send();
    typicalMs = 0.8 * typicalMs + 0.2 * (performance.now() - started);
    // A 2xx, or no answer at all (timeout, reset, shutdown): the route may have this state,
    // so an older one must not follow; after no answer, this event's own retry still goes
    // (a delete's record is tagged with it). A definite non-2xx answer leaves the version as
    // it was, and a newer state may overtake this one while it waits for its retry.
    const outcome = "error" in result ? "unanswered" : result.status >= 200 && result.status < 300 ? "delivered" : "refused";
    // Not awaited, like the ledger's delivered mark: the entity's next state waits for
    // the lease anyway, and a lost release only makes it wait for the lease to expire.
    versions.leave(route.name, version, owner, outcome).then(
      (held) => {
        if (held) return;
        dispatchEntityLeaseExpired.inc(labels);
        logger.warn({ ...context, entity: version.entity, leaseMs }, "a delivery outlived its entity lease (2 × timeoutMs + 1 s): another state of this entity may have been sent alongside it");
      },
      (error: unknown) => logger.warn({ ...context, err: error, entity: version.entity }, "recording the entity's delivered state failed; its next state waits for the lease to expire"),
    );
    return result;
  };
}

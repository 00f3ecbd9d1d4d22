import type { CloudEvent, Origin } from "../events/cloud-event.js";
import { eventTypeLabel } from "../events/event-types.js";
import { routeMatches, type Route } from "../routes/route.js";
import { eventsDuplicate, eventsReceived, eventsUnrouted } from "../metrics/registry.js";
import { reconcilePriority } from "./delivery-job.js";
import type { DeliveryQueues } from "./delivery-queues.js";
import type { EventLedger } from "./event-ledger.js";
import { jobIdFor, replayJobIdFor } from "./job-id.js";

export interface StoreOptions {
  origin: Origin;
  streamId?: string;
  /** Store and deliver again even when the id is known (a forced reconcile). */
  force?: boolean;
}

export interface StoreResult {
  status: "stored" | "duplicate";
  /** the routes the event was queued for */
  routes: string[];
}

export interface EventStore {
  store(event: CloudEvent, options: StoreOptions): Promise<StoreResult>;
}

/**
 * The one way an event enters the system, from a webhook or a reconcile alike:
 * 1. a known id (within the dedupe TTL) is a duplicate, unless forced; an id whose record
 *    holds only route deliveries is stored with `recheck`, so those routes skip it;
 * 2. one job per matching route is added, with an id derived from the event id, so a
 *    store retried after a Redis fault adds nothing twice;
 * 3. only then the ledger records the id. A crash between 2 and 3 leaves no ledger entry,
 *    so the tenant's retry stores the event again instead of being told "duplicate".
 * Any Redis error rejects: the caller answers 503 and the tenant retries.
 */
export function createEventStore(ledger: EventLedger, queues: DeliveryQueues, routes: Route[]): EventStore {
  return {
    async store(event, { origin, streamId, force = false }) {
      const receivedAt = Date.now();
      // A forced store delivers anyway, so it needs neither the check nor a recheck.
      const state = force ? "absent" : await ledger.lookup(event.id);
      if (state === "arrived") {
        await ledger.recordDuplicate(event.id, receivedAt);
        eventsDuplicate.inc({ origin });
        return { status: "duplicate", routes: [] };
      }
      const matched = routes.filter((route) => routeMatches(route, event.type)).map((route) => route.name);
      const jobId = force ? replayJobIdFor(event.id, receivedAt) : jobIdFor(event.id);
      const data = { event, origin, streamId, receivedAt, force: force || undefined, recheck: state === "delivered_only" || undefined };
      await Promise.all(
        matched.map((route) =>
          queues
            .forRoute(route)
            .add(event.type, data, { jobId, priority: origin === "reconcile" ? reconcilePriority : undefined }),
        ),
      );
      const first = await ledger.claim(event.id, { receivedAt, origin, streamId, type: event.type, routes: matched }, force);
      if (!first) {
        // Another request with the same id won the race between our check and our claim.
        eventsDuplicate.inc({ origin });
        return { status: "duplicate", routes: [] };
      }
      eventsReceived.inc({ type: eventTypeLabel(event.type), origin });
      // Stored, answered 202, and delivered nowhere: never silently (GET /admin/events shows it too).
      if (matched.length === 0) eventsUnrouted.inc({ type: eventTypeLabel(event.type) });
      return { status: "stored", routes: matched };
    },
  };
}

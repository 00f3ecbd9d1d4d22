import { eventTypeLabel } from "../events/event-types.js";
import { eventsDuplicate, eventsReceived, eventsUnrouted } from "../metrics/registry.js";
import type { EventStore } from "./event-store.js";

/**
 * The event store, counted: events_received_total, events_duplicate_total and
 * events_unrouted_total (an event stored, answered 202 and delivered nowhere is never
 * silent; GET /admin/events shows it too). One wrapper for every caller, webhook or reconcile.
 */
export function countStoredEvents(store: EventStore): EventStore {
  return {
    async store(event, options) {
      const result = await store.store(event, options);
      const type = eventTypeLabel(event.type);
      if (result.status === "duplicate") eventsDuplicate.inc({ origin: options.origin });
      else {
        eventsReceived.labels(type, options.origin).inc();
        // Filtered out by every route it matched is not unrouted: dispatch_total{outcome="filtered"} counts it.
        if (result.routes.length === 0 && !result.filtered?.length) eventsUnrouted.inc({ type });
      }
      return result;
    },
  };
}

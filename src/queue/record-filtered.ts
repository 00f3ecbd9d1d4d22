import type { CloudEvent } from "../events/cloud-event.js";
import type { Logger } from "../logging/logger.js";
import { dispatchTotal } from "../metrics/registry.js";
import type { EventLedger } from "./event-ledger.js";

/**
 * What a stored event that some routes' filters left out leaves behind (event-store.ts
 * `onFiltered`): `dispatch_total{route,outcome="filtered"}`, the ledger's mark for
 * GET /admin/events (the archive has it from the event's own record), and a debug line:
 * a filter doing its job is no news, but it is never silent.
 */
export function createFilteredRecorder(ledger: EventLedger, logger: Logger) {
  return (event: CloudEvent, routes: string[], receivedAt: number) => {
    for (const route of routes) {
      dispatchTotal.inc({ route, outcome: "filtered" });
      // Not awaited, as the dispatcher's marks: the event is stored; only its view would lack the mark.
      ledger.markFiltered(event.id, route, receivedAt).catch((error: unknown) => logger.warn({ err: error, eventId: event.id, route }, "could not mark the event filtered in the ledger; GET /admin/events lacks it"));
    }
    if (logger.isLevelEnabled("debug")) logger.debug({ eventId: event.id, type: event.type, routes }, "event left out by these routes' filters (outcome filtered): no delivery job");
  };
}

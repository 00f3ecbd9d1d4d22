import { Router } from "express";
import { z } from "zod";
import { tenantEventTypes } from "../events/event-types.js";
import { ApiError } from "./api-error.js";
import { requireGlobalClient, requireScope } from "./api-guard.js";
import type { DeliveryEngine } from "./delivery-engine.js";
import { deliveryRecord, type Delivery, type DeliveryStore } from "./delivery-store.js";
import { findStream } from "./find-stream.js";
import { paginate } from "./paginate.js";
import { pathId } from "./path-id.js";
import type { StreamStore } from "./stream-store.js";
import { validationError } from "./validation-error.js";

const eventType = z.enum(tenantEventTypes);
const commaSeparated = z.string().transform((value) => value.split(",").filter(Boolean));

/**
 * The list's dates are RFC 3339 without fractional seconds, at most 20 characters
 * (`2025-09-08T06:35:17Z`): a JavaScript `toISOString()` value is refused (docs/tenant.md#failed-deliveries).
 */
const listDate = z
  .string()
  .max(20, "Too big: expected string to have <=20 characters")
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:?\d{2})$/, "Invalid date-time: expected RFC 3339 without fractional seconds, e.g. 2025-09-08T06:35:17Z")
  .refine((value) => !Number.isNaN(Date.parse(value)), "Invalid date-time");

const listQuery = z.object({
  statuses: commaSeparated.pipe(z.array(z.enum(["failed", "pending"]))).optional(),
  event_types: commaSeparated.pipe(z.array(eventType)).optional(),
  date_from: listDate.optional(),
  date_to: listDate.optional(),
  from: z.string().min(1).optional(),
  take: z.coerce.number().int().min(1).max(100).default(50),
});

const testBody = z.strictObject({ event_type: eventType, data: z.record(z.string(), z.unknown()).optional() });

const redeliverBody = z.strictObject({
  date_from: z.iso.datetime({ offset: true }).optional(),
  date_to: z.iso.datetime({ offset: true }).optional(),
  statuses: z.array(z.literal("failed")).optional(),
  event_types: z.array(eventType).optional(),
});

/**
 * How the list answers, where the real API's documents disagree or are silent
 * (docs/tenant.md#failed-deliveries): `{deliveries, next}` (the real answers) or a bare
 * array with no cursor (the OpenAPI file's); dates on the event's time (the real rule as
 * seen) or on the last attempt's (not excluded by any document).
 */
export interface DeliveryListShape {
  shape: "object" | "array";
  dates: "event" | "attempt";
}

interface Filter {
  statuses?: string[];
  event_types?: string[];
  date_from?: string;
  date_to?: string;
}

/**
 * Delivery history of one event (docs/tenant.md#delivery-history-of-one-event) and, as the real API has them, the
 * list of deliveries and redelivery of one event or of every failed one matching filters.
 */
export function deliveryRoutes(deps: { streams: StreamStore; deliveries: DeliveryStore; engine: DeliveryEngine; deliveryList: DeliveryListShape }): Router {
  const router = Router();

  const recordsOf = (streamId: string, filter: Filter, dates: DeliveryListShape["dates"] = "event") =>
    deps.deliveries
      .all()
      .filter((delivery) => delivery.event_stream_id === streamId && matches(delivery, filter, dates))
      .flatMap((delivery) => deliveryRecord(delivery) ?? [])
      .filter((record) => !filter.statuses || filter.statuses.includes(record.status));

  router.get("/event-streams/:id/deliveries/:event_id", requireGlobalClient, requireScope("read:event_deliveries"), (req, res) => {
    const stream = findStream(deps.streams, req.params.id);
    const delivery = deps.deliveries.get(stream.id, pathId("event_id", req.params.event_id));
    const record = delivery && deliveryRecord(delivery);
    if (!record) throw new ApiError(404, "The requested event does not exist.");
    res.json(record);
  });

  // Global clients only, like the history of one event (docs/tenant.md#failed-deliveries).
  router.get("/event-streams/:id/deliveries", requireGlobalClient, requireScope("read:event_deliveries"), (req, res) => {
    const stream = findStream(deps.streams, req.params.id);
    const query = listQuery.safeParse(req.query);
    if (!query.success) throw validationError("Query", query.error);
    const page = paginate(recordsOf(stream.id, query.data, deps.deliveryList.dates), query.data.from, query.data.take);
    if (deps.deliveryList.shape === "array") return void res.json(page.items);
    res.json({ deliveries: page.items, ...(page.next ? { next: page.next } : {}) });
  });

  // "Send a test event" (the dashboard's test button): to this stream only, whatever its
  // subscriptions, marked a0purpose "test"; answered with the delivery as it starts.
  router.post("/event-streams/:id/test", requireScope("create:event_stream_test_events"), (req, res) => {
    const stream = findStream(deps.streams, req.params.id);
    const body = testBody.safeParse(req.body ?? {});
    if (!body.success) throw validationError("Payload", body.error);
    const delivery = deps.engine.sendTest(stream, body.data.event_type, body.data.data ?? { object: {} });
    const { id, event_stream_id, status, event_type, attempts, event } = delivery;
    res.json({ id, event_stream_id, status, event_type, attempts, event });
  });

  router.post("/event-streams/:id/redeliver/:event_id", requireScope("update:event_deliveries"), (req, res) => {
    const stream = findStream(deps.streams, req.params.id);
    const delivery = deps.deliveries.get(stream.id, pathId("event_id", req.params.event_id));
    if (!delivery) throw new ApiError(404, "The requested event does not exist.");
    // Only a delivery that failed for good can be redelivered (docs/tenant.md#failed-deliveries: 409 otherwise).
    if (delivery.status !== "failed") throw new ApiError(409, `The delivery of event ${delivery.id} is ${delivery.status}; only failed deliveries can be redelivered.`);
    deps.engine.redeliver(delivery);
    res.status(202).end();
  });

  router.post("/event-streams/:id/redeliver", requireScope("update:event_deliveries"), (req, res) => {
    const stream = findStream(deps.streams, req.params.id);
    const body = redeliverBody.safeParse(req.body ?? {});
    if (!body.success) throw validationError("Payload", body.error);
    const failed = deps.deliveries.all().filter((d) => d.event_stream_id === stream.id && d.status === "failed" && matches(d, body.data));
    for (const delivery of failed) deps.engine.redeliver(delivery);
    res.status(202).json(body.data);
  });

  return router;
}

/** Dates filter on the event's time (the real API's rule as seen; else the last attempt's): `date_from` inclusive, `date_to` exclusive. */
function matches(delivery: Delivery, filter: Filter, dates: DeliveryListShape["dates"] = "event"): boolean {
  const time = Date.parse(dates === "attempt" ? (delivery.attempts.at(-1)?.timestamp ?? delivery.event.time) : delivery.event.time);
  if (filter.event_types && !filter.event_types.includes(delivery.event_type)) return false;
  if (filter.date_from && time < Date.parse(filter.date_from)) return false;
  if (filter.date_to && time >= Date.parse(filter.date_to)) return false;
  return true;
}

import { Router } from "express";
import { z } from "zod";
import { ApiError } from "./api-error.js";
import { newId } from "./new-id.js";
import type { DeliveryListShape } from "./delivery-routes.js";
import type { EventLog } from "./event-log.js";
import type { EventsApiState } from "./event-routes.js";
import { validationError } from "./validation-error.js";

const rawEventBody = z.strictObject({ type: z.string().min(1), data: z.string() });
/** A huge event: `bytes` of padding in its data, or `endless`: a line that never ends. */
const hugeEventBody = z.union([z.strictObject({ bytes: z.number().int().min(1) }), z.strictObject({ endless: z.literal(true) })]);

/** An outage of the management API: while `status` is set, every `/api/v2` call answers it. */
export interface ApiOutage {
  status?: number;
}

/**
 * The control API's switches for how the emulated tenant behaves where the real one may
 * (docs/tenant.md): the Events API's outages, expiries, waits and errors, broken messages,
 * and the deliveries list's shape. Mounted by control-routes.ts, behind its loopback check.
 */
export function tenantBehaviourRoutes(deps: { log: EventLog; eventsApi: EventsApiState; deliveryList: DeliveryListShape; apiOutage: ApiOutage }): Router {
  const router = Router();

  // A message of the Events API whose data is this text as given: what a consumer does with a broken event.
  router.post("/events/raw", (req, res) => {
    const body = rawEventBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    deps.log.appendRaw(body.data.type, body.data.data);
    res.status(202).json({ offset: deps.log.offsetOf(deps.log.head()) });
  });

  // A user.created event whose data carries {"bytes":N} of padding, or {"endless":true}: a line
  // that never ends. Only the Events API serves it (no stream gets it); the padding is never held.
  router.post("/events/huge", (req, res) => {
    const body = hugeEventBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    const id = newId("evt_");
    const event = { id, source: "urn:auth0:emulator", specversion: "1.0" as const, type: "user.created", time: new Date().toISOString(), data: { object: { user_id: "auth0|huge" } }, a0tenant: "emulator" };
    deps.log.appendPadded(event, "bytes" in body.data ? body.data.bytes : Number.POSITIVE_INFINITY);
    res.status(202).json({ id, offset: deps.log.offsetOf(deps.log.head()) });
  });

  // The Events API as a test sees it: connections open now, at most at once, requests by status.
  router.get("/events-api", (_req, res) => {
    const { open, maxOpen, attempts, recent, down, paddingSent } = deps.eventsApi;
    res.json({ open, maxOpen, attempts, recent, down, paddingSent, head: deps.log.offsetOf(deps.log.head()) });
  });

  // {"down":true}: every Events API request is dropped unanswered and open streams are cut; false ends it.
  // {"expire_through":"<offset>"}: the events up to that offset are gone, as retention would drop them (410 after).
  // {"retry_after_seconds":5}: the Retry-After of a 429 past the connection limit (1 at start).
  // {"markers":false}: heartbeats are `: heartbeat` comments alone, no `offset-only` markers.
  // {"end_with_error":"<message>"}: every open stream ends with `event: error` saying it.
  router.put("/events-api", (req, res) => {
    const body = z
      .strictObject({
        down: z.boolean().optional(),
        expire_through: z.string().min(1).optional(),
        retry_after_seconds: z.number().int().min(0).optional(),
        markers: z.boolean().optional(),
        end_with_error: z.string().min(1).optional(),
      })
      .safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    if (body.data.retry_after_seconds !== undefined) deps.eventsApi.retryAfterSeconds = body.data.retry_after_seconds;
    if (body.data.markers !== undefined) deps.eventsApi.markers = body.data.markers;
    if (body.data.end_with_error !== undefined) deps.eventsApi.cut(body.data.end_with_error);
    if (body.data.expire_through !== undefined) {
      const seq = deps.log.seqOf(body.data.expire_through);
      if (seq === undefined) throw new ApiError(400, `No such offset: ${body.data.expire_through}; give one the log served.`);
      deps.log.expireThrough(seq);
    }
    if (body.data.down !== undefined) deps.eventsApi.down = body.data.down;
    if (body.data.down) deps.eventsApi.cut();
    res.json({ down: deps.eventsApi.down });
  });

  // {"down_status":503}: every management API call (/api/v2) answers that status, as a tenant
  // outage does; {"down_status":null} ends it. Tokens are still issued.
  router.put("/api", (req, res) => {
    const body = z.strictObject({ down_status: z.number().int().min(500).max(599).nullable() }).safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    deps.apiOutage.status = body.data.down_status ?? undefined;
    res.json({ down_status: deps.apiOutage.status ?? null });
  });

  // How the deliveries list answers: {"shape":"array"} as the OpenAPI file has it (no cursor),
  // {"dates":"attempt"} filtering on the last attempt's time; "object" and "event" at start.
  router.put("/deliveries-list", (req, res) => {
    const body = z.strictObject({ shape: z.enum(["object", "array"]).optional(), dates: z.enum(["event", "attempt"]).optional() }).safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    Object.assign(deps.deliveryList, body.data);
    res.json(deps.deliveryList);
  });

  return router;
}

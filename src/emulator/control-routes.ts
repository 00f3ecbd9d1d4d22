import express, { Router } from "express";
import { z } from "zod";
import { tenantEventTypes } from "../events/event-types.js";
import { ApiError } from "./api-error.js";
import { newId } from "./new-id.js";
import type { CallLog } from "./call-log.js";
import type { ClientQuotas } from "./client-quotas.js";
import type { ClientRegistry } from "./client-registry.js";
import type { DeliveryEngine } from "./delivery-engine.js";
import type { DeliveryListShape } from "./delivery-routes.js";
import type { DeliveryStore } from "./delivery-store.js";
import type { EventLog } from "./event-log.js";
import type { EventsApiState } from "./event-routes.js";
import type { ProfileStore } from "./profile-store.js";
import { streamCreateBody } from "./stream-schemas.js";
import type { StreamStore } from "./stream-store.js";
import { tenantBehaviourRoutes, type ApiOutage } from "./tenant-behaviour-routes.js";
import { validationError } from "./validation-error.js";

const eventBody = z.object({
  type: z.enum(tenantEventTypes),
  /** The CloudEvent `data`; anything without an `object` key is taken as the entity itself. */
  data: z.record(z.string(), z.unknown()).default({}),
  /** More than one: that many events of the type, each its own id (a burst in one call); the answer lists `ids`. */
  count: z.number().int().min(1).max(10_000).optional(),
});

/** A per-client quota: `requests` per `seconds` (sent back in `Auth0-RateLimit`). */
const quotaBody = z.strictObject({
  requests: z.number().int("give a whole number of requests, e.g. 10").min(1, "give at least 1 request"),
  seconds: z.number().int("give a whole number of seconds, e.g. 1").min(1, "give at least 1 second").default(1),
});

const clientBody = z.strictObject({
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  scopes: z.array(z.string().regex(/^(create|read|update|delete):[a-z_]+$/, "scopes look like read:event_streams")),
  global: z.boolean().default(false),
  quota: quotaBody.optional(),
});

const loopback = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

/**
 * The control API for tests and demos (README.md#settings): no auth,
 * so it answers loopback callers only.
 */
export function controlRoutes(deps: {
  streams: StreamStore;
  deliveries: DeliveryStore;
  profiles: ProfileStore;
  clients: ClientRegistry;
  quotas: ClientQuotas;
  calls: CallLog;
  engine: DeliveryEngine;
  log: EventLog;
  eventsApi: EventsApiState;
  deliveryList: DeliveryListShape;
  apiOutage: ApiOutage;
}): Router {
  const router = Router();
  router.use((req, _res, next) => {
    if (!loopback.has(req.socket.remoteAddress ?? "")) throw new ApiError(403, "The emulator control API answers loopback callers only.");
    next();
  });
  router.use(express.json());
  const knownClient = (clientId: string) => {
    if (!deps.clients.get(clientId)) throw new ApiError(404, `No client ${clientId}; add it first with POST /emulator/clients.`);
    return clientId;
  };

  router.post("/events", (req, res) => {
    const body = eventBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    const { type, data, count } = body.data;
    const object = "object" in data ? data : { object: data };
    // With each id, its offset in the tenant's log (GET /api/v2/events).
    const emitted = () => ({ ...deps.engine.emit(type, object), offset: deps.log.offsetOf(deps.log.head()) });
    if (count === undefined) return void res.status(202).json(emitted());
    const all = Array.from({ length: count }, emitted);
    res.status(202).json({ ids: all.map((event) => event.id), offsets: all.map((event) => event.offset) });
  });

  router.get("/deliveries", (req, res) => {
    const { stream_id: streamId, event_id: eventId } = req.query;
    const deliveries = deps.deliveries
      .all()
      .filter((delivery) => (streamId === undefined || delivery.event_stream_id === streamId) && (eventId === undefined || delivery.id === eventId));
    res.json({ deliveries: deliveries.map((delivery) => ({ ...delivery, event_id: delivery.id })) });
  });

  // A delivery the tenant failed just now for an event of `time` (an hour ago, say): what a
  // delivery that turned failed long after the time its list filters on looks like.
  router.post("/deliveries", (req, res) => {
    const body = z.strictObject({ stream_id: z.string().min(1), time: z.iso.datetime({ offset: true }), type: z.enum(tenantEventTypes).default("user.created") }).safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    const { stream_id: streamId, time, type } = body.data;
    if (!deps.streams.get(streamId)) throw new ApiError(404, `No stream ${streamId}; create it first with POST /emulator/streams.`);
    const id = newId("evt_");
    const event = { id, source: "urn:auth0:emulator", specversion: "1.0" as const, type, time, data: { object: { user_id: "auth0|late" } }, a0tenant: "emulator", a0stream: streamId };
    const now = new Date().toISOString();
    deps.deliveries.add({ id, event_stream_id: streamId, event_type: type, status: "failed", attempts: [{ status: "failed", timestamp: now, error_message: "placed through the control API" }], event, created_at: time });
    res.status(201).json({ id });
  });

  router.use(tenantBehaviourRoutes(deps));

  // A client's scopes changed, as an administrator grants one: tokens issued afterwards carry them.
  router.patch("/clients/:id", (req, res) => {
    const body = z.strictObject({ scopes: clientBody.shape.scopes }).safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    const client = deps.clients.get(req.params.id);
    if (!client) throw new ApiError(404, `No client with id ${req.params.id}; add it with POST /emulator/clients.`);
    client.scopes = body.data.scopes;
    res.json({ client_id: client.clientId, scopes: client.scopes, global: client.global });
  });

  router.post("/clients", (req, res) => {
    const body = clientBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    const { client_id, client_secret, scopes, global, quota } = body.data;
    if (!deps.clients.add({ clientId: client_id, clientSecret: client_secret, scopes, global })) {
      throw new ApiError(409, `A client with id ${client_id} exists already; pick another client_id.`);
    }
    deps.quotas.set(client_id, quota);
    res.status(201).json({ client_id, scopes, global, ...(quota && { quota }) });
  });

  // Sets the quota of any client, the default one included; DELETE lifts it.
  router.put("/clients/:id/quota", (req, res) => {
    const clientId = knownClient(req.params.id);
    const body = quotaBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    deps.quotas.set(clientId, body.data);
    res.json({ client_id: clientId, quota: body.data });
  });

  router.delete("/clients/:id/quota", (req, res) => {
    const clientId = knownClient(req.params.id);
    deps.quotas.set(clientId, undefined);
    res.json({ client_id: clientId, quota: null });
  });

  router.get("/calls", (_req, res) => {
    res.json({ callers: deps.calls.all() });
  });

  router.post("/streams", (req, res) => {
    const body = streamCreateBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    res.status(201).json(deps.streams.create(body.data));
  });

  router.get("/streams/:id", (req, res) => {
    const stream = deps.streams.get(req.params.id);
    if (!stream) throw new ApiError(404, "The requested stream does not exist.");
    res.json(stream);
  });

  router.post("/token-exchange-profiles", (_req, res) => {
    res.status(201).json({ id: deps.profiles.create() });
  });

  router.get("/token-exchange-profiles", (_req, res) => {
    res.json({ ids: deps.profiles.ids() });
  });

  return router;
}

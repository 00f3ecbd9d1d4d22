import express, { Router, type ErrorRequestHandler, type Express } from "express";
import { jsonText } from "../events/json-text.js";
import { ApiError } from "./api-error.js";
import { authenticate } from "./api-guard.js";
import type { CallLog } from "./call-log.js";
import type { ClientQuotas } from "./client-quotas.js";
import type { ClientRegistry } from "./client-registry.js";
import { controlRoutes } from "./control-routes.js";
import type { DeliveryEngine } from "./delivery-engine.js";
import { deliveryRoutes, type DeliveryListShape } from "./delivery-routes.js";
import type { DeliveryStore } from "./delivery-store.js";
import type { EventLog } from "./event-log.js";
import { eventRoutes, eventsGate, type EventsApiOptions, type EventsApiState } from "./event-routes.js";
import type { ProfileStore } from "./profile-store.js";
import { profileRoutes } from "./profile-routes.js";
import type { RateLimiter } from "./rate-limiter.js";
import { streamRoutes } from "./stream-routes.js";
import type { StreamStore } from "./stream-store.js";
import type { TokenIssuer } from "./token-issuer.js";
import { tokenRoutes } from "./token-routes.js";
import type { ApiOutage } from "./tenant-behaviour-routes.js";

export interface EmulatorState {
  audience: string;
  tokens: TokenIssuer;
  clients: ClientRegistry;
  limiter: RateLimiter;
  quotas: ClientQuotas;
  calls: CallLog;
  streams: StreamStore;
  deliveries: DeliveryStore;
  profiles: ProfileStore;
  engine: DeliveryEngine;
  log: EventLog;
  eventsApi: EventsApiState;
  eventsOptions: EventsApiOptions;
  deliveryList: DeliveryListShape;
  /** Set through the control API: every management API call answers this status (an outage of the tenant). */
  apiOutage: ApiOutage;
}

/** The emulator's HTTP surface: tokens and keys, `/api/v2`, and the `/emulator` control API. */
export function createEmulatorApp(state: EmulatorState): Express {
  const app = express();
  app.disable("x-powered-by");
  // Events nested deeper than JSON.stringify can write (the tenant stores and lists them
  // all the same): every answer's JSON is written by jsonText, which falls back to a
  // writer without recursion.
  app.use((_req, res, next) => {
    res.json = (body: unknown) => {
      if (!res.get("content-type")) res.type("application/json");
      return res.send(jsonText(body));
    };
    next();
  });
  app.use(tokenRoutes(state));
  app.use("/emulator", controlRoutes(state));
  app.use("/api/v2/events", eventsGate(state.eventsApi));

  const api = Router();
  api.use((_req, _res, next) => {
    if (state.apiOutage.status !== undefined) throw new ApiError(state.apiOutage.status, "The service is unavailable; please try again later.");
    next();
  });
  api.use(authenticate(state));
  // PATCH takes JSON or form-encoded bodies (docs/tenant.md#updating-a-stream); nested fields as destination[type]=webhook.
  api.use(express.json(), express.urlencoded({ extended: true }));
  api.use(streamRoutes(state.streams), deliveryRoutes(state), profileRoutes(state.profiles), eventRoutes(state.log, state.eventsOptions, state.eventsApi));
  app.use("/api/v2", api);

  app.use(() => {
    throw new ApiError(404, "Not Found");
  });
  app.use(errorHandler);
  return app;
}

const errorHandler: ErrorRequestHandler = (error: unknown, req, res, _next) => {
  const parseFailed = typeof error === "object" && error !== null && "type" in error && error.type === "entity.parse.failed";
  if (parseFailed && req.path.startsWith("/oauth/")) {
    res.status(400).json({ error: "invalid_request", error_description: "The request body is not valid JSON" });
    return;
  }
  const apiError =
    error instanceof ApiError
      ? error
      : parseFailed
        ? new ApiError(400, "Invalid request payload JSON format", "invalid_body")
        : new ApiError(500, error instanceof Error ? error.message : "Internal error");
  res.status(apiError.statusCode).json(apiError);
};

import { z } from "zod";
import { tenantEventTypes } from "../events/event-types.js";

/** Hosts on which the emulator, unlike the real tenant, accepts `http://` endpoints (README.md#settings). */
const loopbackHosts = new Set(["localhost", "127.0.0.1", "[::1]"]);

function isAllowedEndpoint(value: string): boolean {
  try {
    const url = new URL(value);
    if (url.protocol === "https:") return true;
    return url.protocol === "http:" && (loopbackHosts.has(url.hostname) || url.hostname.startsWith("127."));
  } catch {
    return false;
  }
}

const text = (max: number) => z.string().min(1).max(max);

/** Write-only secrets (`password`, `token`, `header_value`) are accepted here and never returned. */
const webhookAuthorization = z.discriminatedUnion("method", [
  z.strictObject({ method: z.literal("basic"), username: text(128).regex(/^[^:]*$/, "username must not contain ':'"), password: text(256) }),
  z.strictObject({ method: z.literal("bearer"), token: text(1024) }),
  z.strictObject({
    method: z.literal("custom_header"),
    header_key: text(128).regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "header_key must be a valid HTTP header name"),
    header_value: text(1024),
  }),
]);

/** A destination is replaced whole (docs/tenant.md#updating-a-stream): every part is required. */
const destination = z.strictObject({
  type: z.literal("webhook"),
  configuration: z.strictObject({
    webhook_endpoint: z.string().refine(isAllowedEndpoint, "webhook_endpoint must be an https URL (http only on loopback addresses)"),
    webhook_authorization: webhookAuthorization,
  }),
});

const subscriptions = z.array(z.strictObject({ event_type: z.enum(tenantEventTypes) })).min(1);
const status = z.enum(["enabled", "disabled"]);

/** `PATCH /event-streams/{id}`: every field optional (docs/tenant.md#updating-a-stream), nothing unknown. */
export const streamPatchBody = z.strictObject({
  name: text(128).optional(),
  subscriptions: subscriptions.optional(),
  destination: destination.optional(),
  status: status.optional(),
});

/** `POST /event-streams`: name, subscriptions and destination required; status defaults to enabled. */
export const streamCreateBody = z.strictObject({
  name: text(128),
  subscriptions,
  destination,
  status: status.default("enabled"),
});

export type StreamPatch = z.output<typeof streamPatchBody>;
export type StreamCreate = z.output<typeof streamCreateBody>;
export type Destination = z.output<typeof destination>;
export type WebhookAuthorization = z.output<typeof webhookAuthorization>;

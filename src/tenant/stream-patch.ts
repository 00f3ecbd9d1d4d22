import { z } from "zod";
import { tenantEventTypes } from "../events/event-types.js";
import { isTenantEndpoint } from "./is-tenant-endpoint.js";
import { issuePath } from "./issue-path.js";
import { TenantValidationError } from "./tenant-api-error.js";

const endpoint = z.string().refine(
  (value) => URL.canParse(value) && isTenantEndpoint(new URL(value)),
  { message: "give an https:// URL (http:// only for 127.0.0.1, localhost or [::1])" },
);

/**
 * How the tenant authenticates to the endpoint (docs/tenant.md#webhook-delivery).
 * The secrets are write-only: sent here, never returned.
 */
const authorization = z.discriminatedUnion(
  "method",
  [
    z.strictObject({
      method: z.literal("basic"),
      username: z.string().min(1, "give a user name").refine((name) => !name.includes(":"), "remove the ':' (basic authorization splits on it)"),
      password: z.string().min(1, "give a password"),
    }),
    z.strictObject({ method: z.literal("bearer"), token: z.string().min(1, "give a token") }),
    z.strictObject({
      method: z.literal("custom_header"),
      header_key: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "give a valid HTTP header name"),
      header_value: z.string().min(1, "give a header value"),
    }),
  ],
  { error: "use basic (username, password), bearer (token) or custom_header (header_key, header_value)" },
);

/**
 * A PATCH body for an event stream (docs/tenant.md#updating-a-stream). Every field
 * is optional, but a destination replaces the old one whole, so it must carry the
 * endpoint and the authorization with its secret (docs/tenant.md#updating-a-stream). Unknown keys are
 * refused: a typo would otherwise be sent and silently ignored.
 */
export const streamPatchSchema = z
  .strictObject({
    name: z.string().min(1, "give 1 to 128 characters").max(128, "give 1 to 128 characters"),
    status: z.enum(["enabled", "disabled"], { error: "use enabled or disabled" }),
    subscriptions: z
      .array(
        z.strictObject({
          event_type: z.enum(tenantEventTypes, { error: (issue) => `unknown event type ${JSON.stringify(issue.input)}; use one of ${tenantEventTypes.join(", ")}` }),
        }),
      )
      .min(1, "subscribe to at least one event type"),
    destination: z.strictObject({
      type: z.literal("webhook", { error: "use webhook" }),
      configuration: z.strictObject({ webhook_endpoint: endpoint, webhook_authorization: authorization }),
    }),
  })
  .partial()
  .refine((patch) => Object.keys(patch).length > 0, { message: "give at least one of name, status, subscriptions, destination" });

export type StreamPatch = z.infer<typeof streamPatchSchema>;
export type WebhookAuthorization = z.infer<typeof authorization>;

/** Checks a patch before it is sent; throws a TenantValidationError naming the first bad field. */
export function validateStreamPatch(patch: unknown): StreamPatch {
  const parsed = streamPatchSchema.safeParse(patch);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.length > 0 ? issuePath(issue.path) : "patch";
  if (issue.code === "unrecognized_keys") throw new TenantValidationError(field, `remove ${issue.keys.join(", ")} (not a field of an event stream update)`);
  // zod's own text for a missing field is "Invalid input: expected string, received undefined".
  const missing = issue.code === "invalid_type" && issue.message.endsWith("received undefined");
  throw new TenantValidationError(field, missing ? "is required" : issue.message);
}

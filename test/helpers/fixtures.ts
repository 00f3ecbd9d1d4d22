import { randomBytes } from "node:crypto";
import type { CloudEvent } from "../../src/events/cloud-event.js";

const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** A real-shaped id: `evt_` or `est_` and 22 base58 characters (docs/tenant.md#identifiers). */
export function tenantId(prefix: "evt" | "est"): string {
  return `${prefix}_${Array.from(randomBytes(22), (byte) => base58[byte % 58]).join("")}`;
}

/** A real-shaped `user.updated` event as the tenant pushes it (docs/tenant.md#webhook-delivery). */
export function userEvent(overrides: Partial<CloudEvent> = {}): CloudEvent {
  const now = new Date().toISOString();
  return {
    id: tenantId("evt"),
    source: "urn:auth0:acme.us.auth0.com",
    specversion: "1.0",
    type: "user.updated",
    time: now,
    data: {
      object: {
        user_id: "auth0|679fb1b1e809445f129bc18d",
        email: "nick-testing-21@example.com",
        created_at: "2025-02-02T17:56:01.566Z",
        updated_at: now,
        identities: [{ connection: "Username-Password-Authentication", provider: "auth0", user_id: "679fb1b1e809445f129bc18d", isSocial: false }],
      },
    },
    a0tenant: "acme",
    a0stream: "est_38ANnv8pQhqsZrX2VFbftv",
    ...overrides,
  };
}

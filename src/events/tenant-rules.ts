import type { CloudEvent } from "./cloud-event.js";
import { isTenantEventType } from "./event-types.js";

export type TenantRule = "id_length" | "event_type";

/**
 * The tenant's own rules (docs/tenant.md#identifiers, docs/tenant.md#event-types: 26-character ids, the event type list). An
 * event that breaks them is still stored: a 4xx would make the tenant drop it for good
 * (docs/tenant.md#webhook-delivery), so the receiver only counts and logs what this returns.
 */
export function brokenTenantRules(event: CloudEvent): TenantRule[] {
  const broken: TenantRule[] = [];
  if (event.id.length !== 26) broken.push("id_length");
  if (!isTenantEventType(event.type)) broken.push("event_type");
  return broken;
}

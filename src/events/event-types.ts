/**
 * The tenant's event type names (docs/tenant.md#event-types). Events of other types are
 * accepted and counted (a 4xx would make the tenant drop them for good, docs/tenant.md#webhook-delivery).
 */
export const tenantEventTypes = [
  "group.created",
  "group.deleted",
  "group.updated",
  "group.member.added",
  "group.member.deleted",
  "group.role.assigned",
  "group.role.deleted",
  "organization.created",
  "organization.deleted",
  "organization.updated",
  "organization.connection.added",
  "organization.connection.removed",
  "organization.connection.updated",
  "organization.group.role.assigned",
  "organization.group.role.deleted",
  "organization.member.added",
  "organization.member.deleted",
  "organization.member.role.assigned",
  "organization.member.role.deleted",
  "user.created",
  "user.deleted",
  "user.updated",
] as const;

export type TenantEventType = (typeof tenantEventTypes)[number];

const known = new Set<string>(tenantEventTypes);

export function isTenantEventType(type: string): type is TenantEventType {
  return known.has(type);
}

/** A bounded metric label: the type itself when the tenant knows it, else `other`. */
export function eventTypeLabel(type: string): string {
  return known.has(type) ? type : "other";
}

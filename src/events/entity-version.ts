import type { CloudEvent } from "./cloud-event.js";

/** Which state of which entity an event carries, for a route with `dropStale` (README.md#routes). */
export interface EntityVersion {
  /** The entity's kind and id, e.g. `user:auth0|679fb1b1e809445f129bc18d`. */
  entity: string;
  /** ms since epoch: `data.object.updated_at`, else the event's `time`. */
  age: number;
  /** A delete is the entity's newest state whatever its age; a create after it starts a new life. */
  change: "created" | "deleted" | "changed";
  /** The event carrying the state: a re-run of the very state recorded goes again (entity-versions.lua). */
  eventId: string;
}

/**
 * The field of `data.object` that names each kind of entity (README.md#stale-updates-dropstale: users by
 * `user_id`; organizations, groups and connections by `id`).
 */
const idFields: Record<string, string> = { user: "user_id", organization: "id", group: "id", connection: "id" };

/**
 * The entity state an event carries, or undefined when it is about no entity. Only
 * `<kind>.<action>` types carry an entity's state (`user.updated`, `organization.deleted`):
 * relationship events (`organization.member.added`, `group.role.deleted`, ...) describe a
 * link between two entities, their `data.object` holds both (`{ organization, user }`,
 * no `id`), and a `*.member.deleted` must never count as the organization's delete. They,
 * and an event whose id or age is missing, are delivered unguarded.
 */
export function entityVersionOf(event: CloudEvent): EntityVersion | undefined {
  const [kind, action, ...more] = event.type.split(".");
  if (!kind || !action || more.length > 0 || !Object.hasOwn(idFields, kind)) return undefined;
  const object = objectOf(event.data);
  const id = object?.[idFields[kind]!];
  if (typeof id !== "string" || id === "") return undefined;
  const age = timeOf(object!.updated_at) ?? timeOf(event.time);
  if (age === undefined) return undefined;
  return { entity: `${kind}:${id}`, age, change: action === "deleted" ? "deleted" : action === "created" ? "created" : "changed", eventId: event.id };
}

function objectOf(data: unknown): Record<string, unknown> | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const object = (data as { object?: unknown }).object;
  return typeof object === "object" && object !== null ? (object as Record<string, unknown>) : undefined;
}

/** An ISO 8601 time (the tenant's `updated_at` and `time`) in ms; undefined when absent or unreadable. */
function timeOf(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

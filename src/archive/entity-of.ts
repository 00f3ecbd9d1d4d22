import type { CloudEvent } from "../events/cloud-event.js";

/**
 * The user, organization, group or connection an event is about, as the tenant names it
 * (`auth0|679f...`, `org_...`): what `--entity` searches and `events forget` erases. A
 * user id wins where an event names both (`organization.member.added`: the member is the
 * person whose data it carries). Undefined when it names none.
 */
export function entityOf(event: CloudEvent): string | undefined {
  const data = event.data;
  if (typeof data !== "object" || data === null) return undefined;
  const object = (data as { object?: unknown }).object;
  if (typeof object !== "object" || object === null) return undefined;
  const fields = object as Record<string, unknown>;
  const candidates = [fields.user_id, (fields.user as { user_id?: unknown } | undefined)?.user_id, fields.id, (fields.organization as { id?: unknown } | undefined)?.id, (fields.group as { id?: unknown } | undefined)?.id];
  const id = candidates.find((value) => typeof value === "string" && value !== "");
  return id as string | undefined;
}

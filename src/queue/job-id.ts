import { hash } from "node:crypto";

/**
 * A BullMQ job id for an event id. BullMQ ignores a second add with the same id, which
 * makes a retried store idempotent. Its ids must not contain `:` nor be all digits
 * (docs/libraries.md#bullmq-job-ids), so other ids are hashed (`h-` + 40 hex digits of the id's sha256).
 * Raw ids and derived ones live in separate namespaces: an id shaped like a derived one
 * (`h-` + 40 hex digits at its start, or `-replay-` in it) is hashed too, so no two event
 * ids share a job (docs/deploy.md says what this changed for jobs stored before).
 */
export function jobIdFor(eventId: string): string {
  if (/^[A-Za-z0-9_.-]{1,128}$/.test(eventId) && !/^\d+$/.test(eventId) && !looksDerived(eventId)) return eventId;
  return hashedJobId(eventId);
}

/** A forced replay must not collide with the job of the first delivery. */
export function replayJobIdFor(eventId: string, now = Date.now()): string {
  return `${jobIdFor(eventId)}-replay-${now.toString(36)}`;
}

function looksDerived(eventId: string): boolean {
  return /^h-[0-9a-f]{40}/.test(eventId) || eventId.includes("-replay-");
}

/** The id's UTF-8 digest: ids reach here well-formed (validate-cloud-event.ts), so UTF-8 is exact. */
export function hashedJobId(eventId: string): string {
  return `h-${hash("sha256", eventId, "hex").slice(0, 40)}`;
}

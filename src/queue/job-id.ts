import { createHash } from "node:crypto";

/**
 * A BullMQ job id for an event id. BullMQ ignores a second add with the same id, which
 * makes a retried store idempotent. Its ids must not contain `:` nor be all digits
 * (STACK-NOTES.md), so other ids are hashed.
 */
export function jobIdFor(eventId: string): string {
  if (/^[A-Za-z0-9_.-]{1,128}$/.test(eventId) && !/^\d+$/.test(eventId)) return eventId;
  return `h-${createHash("sha256").update(eventId).digest("hex").slice(0, 40)}`;
}

/** A forced replay must not collide with the job of the first delivery. */
export function replayJobIdFor(eventId: string, now = Date.now()): string {
  return `${jobIdFor(eventId)}-replay-${now.toString(36)}`;
}

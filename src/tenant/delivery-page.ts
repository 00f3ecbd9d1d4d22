import { z } from "zod";
import { deliveryRecordSchema, type DeliveryRecord } from "./delivery-record.js";

/**
 * One page of `GET /event-streams/{id}/deliveries`: real answers are `{deliveries, next}`,
 * the OpenAPI file says a bare array (read as one last page); `next` is an opaque cursor,
 * absent on the last page (docs/tenant.md#failed-deliveries).
 */
export const deliveryPageSchema = z
  .union([
    z.array(z.unknown()).transform((deliveries) => ({ deliveries, next: undefined, cursorless: true as const })),
    // Each record on its own: one the schema refuses is set aside (`unreadable`), so it
    // cannot hold back the rest of its page, nor every sweep after it.
    z.looseObject({ deliveries: z.array(z.unknown()), next: z.string().nullish() }).transform(({ deliveries, next }) => ({ deliveries, next, cursorless: undefined })),
  ])
  .transform(({ deliveries, next, cursorless }) => {
    const readable: DeliveryRecord[] = [];
    const unreadable: UnreadableRecord[] = [];
    deliveries.forEach((raw, index) => {
      const parsed = deliveryRecordSchema.safeParse(raw);
      if (parsed.success) return void readable.push(parsed.data);
      const issue = parsed.error.issues[0]!;
      const id = typeof (raw as { id?: unknown } | null)?.id === "string" ? (raw as { id: string }).id : undefined;
      unreadable.push({ id, index, reason: `the tenant's record does not read as a delivery record: ${issue.path.join(".") || "the record"} ${issue.message}` });
    });
    return { deliveries: readable, unreadable, next, cursorless };
  });

/** A record of a page that does not read as a delivery record: what is known of it, and why. */
export interface UnreadableRecord {
  /** its `id`, when it has a string one */
  id?: string;
  /** its place in the page */
  index: number;
  reason: string;
}

export interface DeliveryPage {
  deliveries: DeliveryRecord[];
  /** Records of the page that could not be read; none when absent. */
  unreadable?: UnreadableRecord[];
  /** Pass as `from` to get the next page; undefined on the last page. */
  next?: string;
  /** A bare array (the OpenAPI file's shape): no cursor, so a full page may not be the last. */
  cursorless?: true;
}

export interface DeliveryListQuery {
  /** e.g. `["failed"]` */
  statuses?: string[];
  /** Event types, e.g. `["user.created"]` */
  eventTypes?: string[];
  /** Inclusive; sent to the second (the tenant refuses fractions). */
  dateFrom?: Date;
  /** Exclusive; sent rounded up to the next whole second, so an event in its last second is listed. */
  dateTo?: Date;
  /** 1 to 100. @defaultValue the tenant's, 50 */
  take?: number;
}

/**
 * A date as the list accepts it: RFC 3339 without fractional seconds, at most 20
 * characters (`2025-09-08T06:35:17Z`); a `toISOString()` value is refused with 400
 * (docs/tenant.md#failed-deliveries). Fractions are dropped, so a bound moves down to its whole second.
 */
export function tenantDate(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * An exclusive upper bound as the list accepts it: rounded up, not down, to its whole
 * second. Dropping the fraction of `now` would leave out every event of the current second.
 */
export function tenantDateBefore(date: Date): string {
  return tenantDate(new Date(Math.ceil(date.getTime() / 1000) * 1000));
}

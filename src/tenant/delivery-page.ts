import { z } from "zod";
import { deliveryRecordSchema, type DeliveryRecord } from "./delivery-record.js";

/**
 * One page of `GET /event-streams/{id}/deliveries`: real answers are `{deliveries, next}`,
 * the OpenAPI file says a bare array (read as one last page); `next` is an opaque cursor,
 * absent on the last page (real-world.md, "Other operations").
 */
export const deliveryPageSchema = z.preprocess(
  (body) => (Array.isArray(body) ? { deliveries: body } : body),
  z.looseObject({ deliveries: z.array(deliveryRecordSchema), next: z.string().nullish() }),
);

export interface DeliveryPage {
  deliveries: DeliveryRecord[];
  /** Pass as `from` to get the next page; undefined on the last page. */
  next?: string;
}

export interface DeliveryListQuery {
  /** e.g. `["failed"]` */
  statuses?: string[];
  /** Event types, e.g. `["user.created"]` */
  eventTypes?: string[];
  /** Inclusive; sent to the second (the tenant refuses fractions). */
  dateFrom?: Date;
  /** Exclusive; sent to the second. */
  dateTo?: Date;
  /** 1 to 100. @defaultValue the tenant's, 50 */
  take?: number;
}

/**
 * A date as the list accepts it: RFC 3339 without fractional seconds, at most 20
 * characters (`2025-09-08T06:35:17Z`); a `toISOString()` value is refused with 400
 * (real-world.md). Fractions are dropped, so a bound moves down to its whole second.
 */
export function tenantDate(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

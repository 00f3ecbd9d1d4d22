import { z } from "zod";

/** Statuses the document knows (`failed`) and those real answers add (docs/tenant.md#delivery-history-of-one-event); others still parse. */
type DeliveryStatus = "failed" | "retrying" | "pending" | (string & {});

/**
 * The stored copy of the event (docs/tenant.md#delivery-history-of-one-event). Real answers add the
 * extensions `a0tenant`/`a0stream` and send `data` as an object where the document says
 * string; both are accepted, and every attribute is kept as sent, so the reconciler can
 * replay the event whole.
 */
export const storedEventSchema = z.looseObject({
  id: z.string().min(1),
  source: z.string().optional(),
  specversion: z.string().optional(),
  type: z.string().optional(),
  time: z.string().optional(),
  data: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
});

export const deliveryAttemptSchema = z.looseObject({
  status: z.string() as z.ZodType<DeliveryStatus>,
  timestamp: z.string(),
  error_message: z.string().optional(),
  /** Real answers only (docs/tenant.md#delivery-history-of-one-event). */
  duration: z.number().optional(),
});

/**
 * The delivery history of one event of one stream (docs/tenant.md#delivery-history-of-one-event). The
 * document forbids extra properties, real answers have them: loose, but the required
 * fields are checked. `event` is present only when the delivery failed.
 */
export const deliveryRecordSchema = z.looseObject({
  id: z.string().min(1),
  event_stream_id: z.string().min(1),
  status: z.string() as z.ZodType<DeliveryStatus>,
  event_type: z.string(),
  attempts: z.array(deliveryAttemptSchema),
  event: storedEventSchema.optional(),
});

export type StoredEvent = z.infer<typeof storedEventSchema>;
export type DeliveryAttempt = z.infer<typeof deliveryAttemptSchema>;
export type DeliveryRecord = z.infer<typeof deliveryRecordSchema>;

/** The CloudEvent as the tenant sends and stores it (docs/tenant.md#webhook-delivery). */
export interface TenantEvent {
  id: string;
  source: string;
  specversion: "1.0";
  type: string;
  time: string;
  data: Record<string, unknown>;
  a0tenant: string;
  a0stream: string;
  /** `test` on an event the tenant's "send a test event" made (POST /event-streams/{id}/test). */
  a0purpose?: "test";
}

/**
 * One attempt. The API shows `failed` and `retrying` (a redelivery marker); `succeeded`
 * is the emulator's own note, seen only on the control API since a success has no record.
 */
export interface DeliveryAttempt {
  status: "failed" | "retrying" | "succeeded";
  timestamp: string;
  error_message?: string;
  /** Milliseconds, a float as in real records. */
  duration?: number;
}

/** The delivery of one event to one stream; its `id` is the event id, as in real records. */
export interface Delivery {
  id: string;
  event_stream_id: string;
  event_type: string;
  /** `pending` while attempts remain; `failed` for good after the last one. */
  status: "pending" | "failed" | "succeeded";
  attempts: DeliveryAttempt[];
  /** What was pushed; the history shows `storedEvent` instead. */
  event: TenantEvent;
  created_at: string;
}

export interface DeliveryStore {
  add(delivery: Delivery): void;
  get(streamId: string, eventId: string): Delivery | undefined;
  /** Every delivery in creation order. */
  all(): Delivery[];
}

export function createDeliveryStore(): DeliveryStore {
  const deliveries = new Map<string, Delivery>();
  const key = (streamId: string, eventId: string) => `${streamId}/${eventId}`;
  return {
    add: (delivery) => void deliveries.set(key(delivery.event_stream_id, delivery.id), delivery),
    get: (streamId, eventId) => deliveries.get(key(streamId, eventId)),
    all: () => [...deliveries.values()],
  };
}

/**
 * The delivery history record the API answers (delivery-record.example.json), or
 * undefined when the API has none: a success has no record (docs/tenant.md#delivery-history-of-one-event), nor has a
 * delivery whose first attempt is still under way. The event is attached only when failed.
 */
export function deliveryRecord(delivery: Delivery) {
  if (delivery.status === "succeeded" || !delivery.attempts.some((attempt) => attempt.status === "failed")) return undefined;
  return {
    id: delivery.id,
    event_stream_id: delivery.event_stream_id,
    event_type: delivery.event_type,
    status: delivery.status as "pending" | "failed",
    attempts: delivery.attempts.filter((attempt) => attempt.status !== "succeeded"),
    ...(delivery.status === "failed" ? { event: storedEvent(delivery.event) } : {}),
  };
}

/** The stored copy differs slightly from what was pushed: `source` is just `urn:auth0:` (docs/tenant.md#delivery-history-of-one-event). */
function storedEvent(event: TenantEvent): TenantEvent {
  return { ...event, source: "urn:auth0:" };
}

import type { CloudEvent } from "../events/cloud-event.js";
import { InvalidEventError } from "../events/invalid-event-error.js";
import { validateCloudEvent } from "../events/validate-cloud-event.js";
import type { DeliveryRecord } from "../tenant/delivery-record.js";

export type RecordDecision =
  | { replay: CloudEvent }
  | { outcome: "not_found" }
  | { outcome: "not_failed"; status: string }
  | { outcome: "no_payload" }
  | { outcome: `error: ${string}` };

/**
 * What to do with the tenant's delivery history of one event (docs/tenant.md#delivery-history-of-one-event):
 * 1. no record (404): the stream or the event is unknown, or it was delivered (a success
 *    has no record) → `not_found`;
 * 2. not `failed` (real answers also show `pending` while attempts remain) → `not_failed`:
 *    the tenant may still deliver it, so replaying now would race it;
 * 3. failed without `event` → `no_payload`: nothing to replay;
 * 4. otherwise the stored event, replayed as stored (`source` `urn:auth0:`, `a0tenant`,
 *    `a0stream` kept), `data` as an object where the tenant sent a JSON string
 *    (the document says string, real answers send an object).
 */
export function decideFromRecord(record: DeliveryRecord | undefined): RecordDecision {
  if (!record) return { outcome: "not_found" };
  if (record.status !== "failed") return { outcome: "not_failed", status: record.status };
  if (!record.event) return { outcome: "no_payload" };
  const { data, ...stored } = record.event;
  // Fill only what CloudEvents requires and the tenant may leave out (every field of the
  // stored copy is optional); what it did send wins.
  const candidate = {
    specversion: "1.0",
    source: "urn:auth0:",
    type: record.event_type,
    a0stream: record.event_stream_id,
    ...stored,
    ...(data === undefined ? {} : { data: dataOf(data) }),
  };
  try {
    return { replay: validateCloudEvent(candidate, "event.") };
  } catch (error) {
    if (!(error instanceof InvalidEventError)) throw error;
    return { outcome: `error: the tenant's stored copy of the event is not a valid CloudEvent (${error.detail}); it cannot be replayed as is` };
  }
}

/** A JSON string holding an object is the object itself; any other string stays as sent. */
function dataOf(data: string | Record<string, unknown>): unknown {
  if (typeof data !== "string") return data;
  try {
    const parsed: unknown = JSON.parse(data);
    return typeof parsed === "object" && parsed !== null ? parsed : data;
  } catch {
    return data;
  }
}

import { describe, expect, it } from "vitest";
import { deliveryRecord, type Delivery } from "../../../src/emulator/delivery-store.js";

const event = { id: "evt_q273LFcsfrNovuzswy8qBz", source: "urn:auth0:acme.emulator", specversion: "1.0" as const, type: "user.updated", time: "2025-09-08T06:34:38.679Z", data: { object: { user_id: "u" } }, a0tenant: "acme", a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" };
const delivery = (status: Delivery["status"], attempts: Delivery["attempts"]): Delivery => ({ id: event.id, event_stream_id: event.a0stream, event_type: event.type, status, attempts, event, created_at: event.time });
const failed = { status: "failed" as const, timestamp: "2025-09-08T06:35:17.662Z", error_message: "HTTP 503", duration: 3.2 };

describe("deliveryRecord", () => {
  it("when a delivery succeeded or has not failed yet, then the API has no record of it", () => {
    expect(deliveryRecord(delivery("succeeded", [failed, { status: "succeeded", timestamp: failed.timestamp }]))).toBeUndefined();
    expect(deliveryRecord(delivery("pending", []))).toBeUndefined();
  });

  it("when a delivery is still retrying, then it is pending, without the event", () => {
    const record = deliveryRecord(delivery("pending", [failed]));
    expect(record).toMatchObject({ status: "pending", attempts: [failed] });
    expect(record).not.toHaveProperty("event");
  });

  it("when a delivery failed for good, then the record has the real shape and the stored event", () => {
    const record = deliveryRecord(delivery("failed", [failed, failed, failed, failed]));
    expect(Object.keys(record!).sort()).toEqual(["attempts", "event", "event_stream_id", "event_type", "id", "status"]);
    expect(record!.event).toEqual({ ...event, source: "urn:auth0:" });
  });
});

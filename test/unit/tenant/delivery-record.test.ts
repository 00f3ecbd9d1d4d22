import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { deliveryRecordSchema } from "../../../src/tenant/delivery-record.js";

// A recorded real answer (shared/spec/delivery-record.example.json), copied so the repo stands alone.
const fixture: unknown = JSON.parse(readFileSync(new URL("./fixtures/delivery-record.example.json", import.meta.url), "utf8"));

describe("deliveryRecordSchema", () => {
  it("when a real-shaped record is parsed, then nothing is lost: extensions, attempt durations, retrying markers", () => {
    const record = deliveryRecordSchema.parse(fixture);
    expect(record).toEqual(fixture);
    expect(record.event?.a0stream).toBe("est_aD5AUDqZbHFcMoEx2LxAk9");
    expect(record.event?.a0tenant).toBe("acme");
    expect(record.attempts.map((attempt) => attempt.status)).toContain("retrying");
    expect(record.attempts[0]?.duration).toBeCloseTo(19.97);
  });

  it("when data is a string as the document says, then it parses too", () => {
    const record = deliveryRecordSchema.parse({
      id: "evt_q273LFcsfrNovuzswy8qBz",
      event_stream_id: "est_aD5AUDqZbHFcMoEx2LxAk9",
      status: "failed",
      event_type: "user.created",
      attempts: [{ status: "failed", timestamp: "2025-09-08T06:35:17.662Z" }],
      event: { id: "evt_q273LFcsfrNovuzswy8qBz", data: '{"object":{}}' },
    });
    expect(record.event?.data).toBe('{"object":{}}');
  });

  it("when a pending delivery has no event, then it parses", () => {
    const record = deliveryRecordSchema.parse({ id: "x", event_stream_id: "y", status: "pending", event_type: "user.created", attempts: [] });
    expect(record.event).toBeUndefined();
  });

  it("when a required field is missing, then the issue names it", () => {
    const result = deliveryRecordSchema.safeParse({ ...(fixture as object), attempts: [{ status: "failed" }] });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(["attempts", 0, "timestamp"]);
  });
});

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { decideFromRecord } from "../../../src/reconcile/decide-from-record.js";
import { deliveryRecordSchema, type DeliveryRecord } from "../../../src/tenant/delivery-record.js";

// The recorded real answer (shared/spec/delivery-record.example.json), as the tenant tests keep it.
const real: DeliveryRecord = deliveryRecordSchema.parse(
  JSON.parse(readFileSync(new URL("../tenant/fixtures/delivery-record.example.json", import.meta.url), "utf8")),
);

describe("decideFromRecord", () => {
  it("when the tenant has no record (404), then the outcome is not_found", () => {
    expect(decideFromRecord(undefined)).toEqual({ outcome: "not_found" });
  });

  it("when the delivery is still pending, then the outcome is not_failed with the status", () => {
    const { event: _event, ...pending } = real;
    expect(decideFromRecord({ ...pending, status: "pending" })).toEqual({ outcome: "not_failed", status: "pending" });
  });

  it("when the delivery failed but carries no event, then the outcome is no_payload", () => {
    const { event: _event, ...bare } = real;
    expect(decideFromRecord(bare)).toEqual({ outcome: "no_payload" });
  });

  it("when a real failed record is read, then its event is replayed as stored: source, a0tenant, a0stream and data kept", () => {
    const decision = decideFromRecord(real);
    expect(decision).toEqual({ replay: real.event });
    if (!("replay" in decision)) throw new Error("expected a replay");
    expect(decision.replay.source).toBe("urn:auth0:");
    expect(decision.replay.a0stream).toBe("est_aD5AUDqZbHFcMoEx2LxAk9");
    expect(decision.replay.a0tenant).toBe("acme");
  });

  it("when data is a JSON string as the document says, then the replayed event has it as an object", () => {
    const decision = decideFromRecord({ ...real, event: { ...real.event!, data: '{"object":{"user_id":"auth0|1"}}' } });
    expect(decision).toMatchObject({ replay: { data: { object: { user_id: "auth0|1" } } } });
  });

  it("when data is a string that is not JSON, then it is replayed as the string", () => {
    const decision = decideFromRecord({ ...real, event: { ...real.event!, data: "plain text" } });
    expect(decision).toMatchObject({ replay: { data: "plain text" } });
  });

  it.each(["42", "null", '"quoted"', "true"])("when data is a JSON string holding no object (%s), then it is replayed as the string, not parsed", (data) => {
    const decision = decideFromRecord({ ...real, event: { ...real.event!, data } });
    expect(decision).toMatchObject({ replay: { data } });
  });

  it("when the stored copy has only an id, then type, source, specversion and a0stream come from the record", () => {
    const decision = decideFromRecord({ ...real, event: { id: real.id } });
    // Strict: no `data` key at all where the tenant stored none (not `data: undefined`).
    expect(decision).toStrictEqual({
      replay: { id: real.id, type: "user.updated", source: "urn:auth0:", specversion: "1.0", a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" },
    });
  });

  it("when the stored copy is not a valid CloudEvent, then the outcome is an error naming the field", () => {
    const decision = decideFromRecord({ ...real, event: { ...real.event!, time: "yesterday" } });
    expect(decision).toEqual({ outcome: expect.stringMatching(/^error: .*event\.time must be an RFC 3339 timestamp/) });
  });
});

import { describe, expect, it } from "vitest";
import { InvalidEventError } from "../../../src/events/invalid-event-error.js";
import { brokenTenantRules } from "../../../src/events/tenant-rules.js";
import { validateCloudEvent } from "../../../src/events/validate-cloud-event.js";
import { userEvent } from "../../helpers/fixtures.js";

function detailOf(value: unknown, where?: string): string {
  try {
    validateCloudEvent(value, where);
  } catch (error) {
    if (error instanceof InvalidEventError) return error.detail;
    throw error;
  }
  throw new Error("expected the event to be refused");
}

describe("validateCloudEvent", () => {
  it("when an event is valid, then it comes back whole, extensions included", () => {
    const event = userEvent({ a0purpose: "test" } as never);
    expect(validateCloudEvent(event)).toEqual(event);
  });

  it("when a required attribute is missing, then the detail names it and the spec", () => {
    const { id: _id, ...noId } = userEvent();
    expect(detailOf(noId)).toBe("id is required (CloudEvents 1.0)");
    const { type: _type, ...noType } = userEvent();
    expect(detailOf(noType, "events[3].")).toBe("events[3].type is required (CloudEvents 1.0)");
  });

  it("when an attribute has the wrong shape, then the detail names the field and what it must be", () => {
    expect(detailOf({ ...userEvent(), specversion: "0.3" })).toBe('specversion must be "1.0"');
    expect(detailOf({ ...userEvent(), time: "yesterday" })).toBe("time must be an RFC 3339 timestamp");
    expect(detailOf({ ...userEvent(), id: "x".repeat(257) })).toBe("id must be at most 256 characters");
    expect(detailOf({ ...userEvent(), data_base64: "AA==" })).toBe("data and data_base64 are mutually exclusive");
  });

  it("when the body is not an object, then the detail says the body must hold a CloudEvent", () => {
    expect(detailOf([1, 2])).toBe("the body must be a JSON object holding a CloudEvent");
    expect(detailOf("x", "events[0].")).toBe("events[0] must be a JSON object holding a CloudEvent");
  });
});

describe("brokenTenantRules", () => {
  it("when an event keeps the tenant's rules, then none are broken; otherwise each is named", () => {
    expect(brokenTenantRules(userEvent())).toEqual([]);
    expect(brokenTenantRules(userEvent({ id: "evt_short", type: "user.renamed" }))).toEqual(["id_length", "event_type"]);
  });
});

/** Where zod's own text showed through ("Invalid input: expected string, received number"), our words. */
describe("validateCloudEvent: an attribute of the wrong type", () => {
  it.each([
    [123, "id must be a string, got a number"],
    [null, "id must be a string, got null"],
    [["evt_1"], "id must be a string, got an array"],
    [{ value: "evt_1" }, "id must be a string, got an object"],
    [true, "id must be a string, got a boolean"],
    ["", "id must be a non-empty string"],
  ])("when the id is %j, then the detail names the field and its type word for word", (id, detail) => {
    expect(detailOf({ ...userEvent(), id })).toBe(detail);
  });

  it("when an event of a batch has a numeric id, then the detail names its place", () => {
    expect(detailOf({ ...userEvent(), id: 7 }, "events[2].")).toBe("events[2].id must be a string, got a number");
  });
});

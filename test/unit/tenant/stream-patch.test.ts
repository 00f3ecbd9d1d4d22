import { describe, expect, it } from "vitest";
import { validateStreamPatch } from "../../../src/tenant/stream-patch.js";
import { TenantValidationError } from "../../../src/tenant/tenant-api-error.js";

const webhook = (endpoint: string, authorization: object) => ({
  destination: { type: "webhook", configuration: { webhook_endpoint: endpoint, webhook_authorization: authorization } },
});
const basic = { method: "basic", username: "streamkeeper", password: "s3cret-pass" };

function fieldOf(patch: unknown): string {
  try {
    validateStreamPatch(patch);
  } catch (error) {
    if (error instanceof TenantValidationError) return error.field;
    throw error;
  }
  throw new Error("the patch was accepted");
}

describe("validateStreamPatch", () => {
  it("when the patch is valid, then it comes back as is", () => {
    const patch = { name: "prod", status: "enabled", subscriptions: [{ event_type: "user.created" }], ...webhook("https://hooks.example.com/webhooks/x", basic) };
    expect(validateStreamPatch(patch)).toEqual(patch);
    expect(validateStreamPatch(webhook("http://127.0.0.1:8080/webhooks/x", { method: "bearer", token: "t0ken-value" }))).toBeTruthy();
    expect(validateStreamPatch(webhook("http://[::1]:8080/w", { method: "custom_header", header_key: "X-Key", header_value: "v" }))).toBeTruthy();
  });

  it("when a field is bad, then the error names it", () => {
    expect(fieldOf({ name: "" })).toBe("name");
    expect(fieldOf({ name: "x".repeat(129) })).toBe("name");
    expect(fieldOf({ status: "paused" })).toBe("status");
    expect(fieldOf({ subscriptions: [] })).toBe("subscriptions");
    expect(fieldOf({ subscriptions: [{ event_type: "user.created" }, { event_type: "user.exploded" }] })).toBe("subscriptions[1].event_type");
    expect(fieldOf(webhook("http://hooks.example.com/w", basic))).toBe("destination.configuration.webhook_endpoint");
    expect(fieldOf(webhook("not a url", basic))).toBe("destination.configuration.webhook_endpoint");
    expect(fieldOf(webhook("https://h.example.com", { method: "basic", username: "a:b", password: "p" }))).toBe("destination.configuration.webhook_authorization.username");
    expect(fieldOf(webhook("https://h.example.com", { method: "basic", username: "a" }))).toBe("destination.configuration.webhook_authorization.password");
    expect(fieldOf(webhook("https://h.example.com", { method: "bearer" }))).toBe("destination.configuration.webhook_authorization.token");
    expect(fieldOf(webhook("https://h.example.com", { method: "digest" }))).toBe("destination.configuration.webhook_authorization.method");
  });

  it("when the patch is empty or has an unknown key, then it is refused before any request", () => {
    expect(fieldOf({})).toBe("patch");
    expect(() => validateStreamPatch({ nmae: "x" })).toThrow(/remove nmae/);
  });

  it("when a required field is missing, then the message says it is required", () => {
    expect(() => validateStreamPatch({ destination: { type: "webhook", configuration: { webhook_authorization: basic } } })).toThrow(
      "destination.configuration.webhook_endpoint: is required",
    );
  });
});

import { describe, expect, it } from "vitest";
import { streamCreateBody, streamPatchBody } from "../../../src/emulator/stream-schemas.js";

const destination = (webhook_endpoint: string, webhook_authorization: object = { method: "bearer", token: "t" }) => ({
  type: "webhook",
  configuration: { webhook_endpoint, webhook_authorization },
});

describe("stream bodies", () => {
  it("when the endpoint is https anywhere or http on loopback, then it is accepted; http elsewhere is not", () => {
    for (const url of ["https://hooks.example.com/x", "http://127.0.0.1:8080/w", "http://localhost/w", "http://[::1]:9/w"]) {
      expect(streamPatchBody.safeParse({ destination: destination(url) }).success, url).toBe(true);
    }
    for (const url of ["http://hooks.example.com/x", "ftp://127.0.0.1/x", "not a url"]) {
      expect(streamPatchBody.safeParse({ destination: destination(url) }).success, url).toBe(false);
    }
  });

  it("when each authorization method carries its fields, then it is accepted; missing secrets or extra fields are not", () => {
    const ok = [
      { method: "basic", username: "u", password: "p" },
      { method: "bearer", token: "t" },
      { method: "custom_header", header_key: "X-Key", header_value: "v" },
    ];
    for (const auth of ok) expect(streamPatchBody.safeParse({ destination: destination("https://h.example", auth) }).success).toBe(true);
    const bad = [
      { method: "basic", username: "u" },
      { method: "basic", username: "a:b", password: "p" },
      { method: "bearer", token: "t", extra: 1 },
      { method: "custom_header", header_key: "bad header", header_value: "v" },
      { method: "hmac", secret: "s" },
    ];
    for (const auth of bad) expect(streamPatchBody.safeParse({ destination: destination("https://h.example", auth) }).success, JSON.stringify(auth)).toBe(false);
  });

  it("when a patch is empty or partial, then it is valid; unknown fields and unknown event types are not", () => {
    expect(streamPatchBody.safeParse({}).success).toBe(true);
    expect(streamPatchBody.safeParse({ status: "disabled" }).success).toBe(true);
    expect(streamPatchBody.safeParse({ colour: "red" }).success).toBe(false);
    expect(streamPatchBody.safeParse({ subscriptions: [{ event_type: "user.exploded" }] }).success).toBe(false);
  });

  it("when a stream is created without a status, then it is enabled", () => {
    const parsed = streamCreateBody.parse({ name: "n", subscriptions: [{ event_type: "user.created" }], destination: destination("https://h.example") });
    expect(parsed.status).toBe("enabled");
  });
});

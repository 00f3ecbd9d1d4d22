import { describe, expect, it } from "vitest";
import { eventStreamPageSchema } from "../../../src/tenant/event-stream.js";

const stream = {
  id: "est_aD5AUDqZbHFcMoEx2LxAk9",
  name: "prod",
  subscriptions: [{ event_type: "user.created" }],
  destination: { type: "webhook", configuration: { webhook_endpoint: "https://h.example.com/w", webhook_authorization: { method: "basic", username: "u" } } },
  status: "enabled",
  created_at: "2025-09-08T06:30:01.000Z",
  updated_at: "2025-09-08T06:30:01.000Z",
  future_field: { kept: true },
};

describe("eventStreamPageSchema", () => {
  it("when a page has a cursor and unknown fields, then both are kept", () => {
    const page = eventStreamPageSchema.parse({ eventStreams: [stream], next: "cursor-1" });
    expect(page.next).toBe("cursor-1");
    expect(page.eventStreams[0]).toEqual(stream);
  });

  it("when the answer is a bare array, then it is one last page", () => {
    expect(eventStreamPageSchema.parse([stream])).toEqual({ eventStreams: [stream] });
  });

  it("when a stream has an unknown status, then the issue names the field", () => {
    const result = eventStreamPageSchema.safeParse({ eventStreams: [stream, { ...stream, status: "paused" }] });
    expect(result.error?.issues[0]?.path).toEqual(["eventStreams", 1, "status"]);
  });
});

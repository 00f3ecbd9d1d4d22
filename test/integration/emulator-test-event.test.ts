import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, getToken, settled, startSink, type Sink } from "./emulator-test-kit.js";

/** The tenant dashboard's "send a test event" (docs/tenant.md, "Authentication and scopes"): what routes with `testEvents: drop` keep off. */
describe("emulator: POST /event-streams/{id}/test", () => {
  let emulator: Emulator;
  let token: string;
  let sink: Sink;

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.01, tenantName: "acme" });
    token = await getToken(emulator);
    sink = await startSink(() => 200);
  });
  afterAll(async () => {
    await emulator.close();
    await sink.close();
  });

  it("when a test event is sent to a stream, then that stream alone gets one event of that type marked a0purpose test, whatever it subscribes to", async () => {
    const streamId = await createStream(emulator, sink.url, { types: ["user.deleted"] });
    // Subscribed to the type, but not the stream tested: it gets nothing (the sink sees one event).
    await createStream(emulator, sink.url, { types: ["user.created"] });
    const answer = await call(emulator, "POST", `/api/v2/event-streams/${streamId}/test`, { token, body: { event_type: "user.created", data: { object: { user_id: "auth0|test" } } } });
    expect(answer.status).toBe(200);
    const body = answer.body as { id: string; event_stream_id: string; event_type: string; event: Record<string, unknown> };
    expect(body).toMatchObject({ event_stream_id: streamId, event_type: "user.created", event: { type: "user.created", a0purpose: "test", a0stream: streamId } });
    expect((await settled(emulator, body.id)).status).toBe("succeeded");
    expect(sink.requests.map((request) => JSON.parse(request.body))).toEqual([expect.objectContaining({ id: body.id, a0purpose: "test", a0stream: streamId, data: { object: { user_id: "auth0|test" } } })]);
  });

  it("when the event type is not one the tenant has, then 400 names it, and nothing is sent", async () => {
    const streamId = await createStream(emulator, sink.url);
    const before = sink.requests.length;
    const answer = await call(emulator, "POST", `/api/v2/event-streams/${streamId}/test`, { token, body: { event_type: "user.exploded" } });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).toContain("event_type");
    expect(sink.requests.length).toBe(before);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, getToken, startSink, type ControlDelivery, type Sink } from "./emulator-test-kit.js";

const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("emulator: deeply nested event data", () => {
  let emulator: Emulator;
  let token: string;
  const sinks: Sink[] = [];
  /** The status of each stream's delivery of `eventId`, from the control API. */
  async function statusPerStream(eventId: string): Promise<Record<string, string>> {
    const { deliveries } = (await call(emulator, "GET", `/emulator/deliveries?event_id=${eventId}`)).body as { deliveries: ControlDelivery[] };
    return Object.fromEntries(deliveries.map((delivery) => [delivery.event_stream_id, delivery.status]));
  }
  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.01, tenantName: "acme" });
    token = await getToken(emulator);
  });
  afterAll(async () => {
    await emulator.close();
    await Promise.all(sinks.map((sink) => sink.close()));
  });

  it("when /emulator/events gets data nested 5,000 deep, then the event is delivered whole, listed in the history once failed, and the emulator keeps answering", async () => {
    const ok = await startSink(() => 200);
    const failing = await startSink(() => 503);
    sinks.push(ok, failing);
    const delivered = await createStream(emulator, ok.url);
    const failed = await createStream(emulator, failing.url);
    const emitted = await call(emulator, "POST", "/emulator/events", { body: `{"type":"user.created","data":{"object":${deep(5000)}}}`, headers: { "content-type": "application/json" } });
    expect(emitted.status).toBe(202);
    const { id } = emitted.body as { id: string; streams: string[] };

    await expect.poll(() => statusPerStream(id), { timeout: 20_000 }).toEqual({ [delivered]: "succeeded", [failed]: "failed" });
    expect(ok.requests).toHaveLength(1);
    expect(ok.requests[0]!.body).toContain(`"data":{"object":${deep(5000)}}`);
    const record = await call(emulator, "GET", `/api/v2/event-streams/${failed}/deliveries/${id}`, { token });
    expect(record.body).toMatchObject({ status: "failed", event: { id } });
    // Read as text: the data is too deep for JSON.stringify to compare it again.
    const listed = await fetch(`${emulator.url}/api/v2/event-streams/${failed}/deliveries?statuses=failed`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);
    const text = await listed.text();
    const { deliveries } = JSON.parse(text) as { deliveries: Array<{ status: string; event: { id: string } }> };
    expect(deliveries.map((listedRecord) => [listedRecord.event.id, listedRecord.status])).toEqual([[id, "failed"]]);
    expect(text).toContain(`"data":{"object":${deep(5000)}}`);
    expect((await call(emulator, "GET", `/api/v2/event-streams/${delivered}`, { token })).status).toBe(200);
  });
});

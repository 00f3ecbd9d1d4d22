import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, getToken, settled, startSink, type Sink } from "./emulator-test-kit.js";

const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("emulator: deeply nested event data", () => {
  let emulator: Emulator;
  let token: string;
  const sinks: Sink[] = [];
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

    expect((await settled(emulator, id)).status).toBeDefined();
    await expect.poll(() => ok.requests.length, { timeout: 20_000 }).toBe(1);
    expect(ok.requests[0]!.body).toContain(`"data":{"object":${deep(5000)}}`);
    await expect.poll(async () => ((await call(emulator, "GET", `/api/v2/event-streams/${failed}/deliveries/${id}`, { token })).body as { status?: string }).status, { timeout: 20_000 }).toBe("failed");
    const record = await call(emulator, "GET", `/api/v2/event-streams/${failed}/deliveries/${id}`, { token });
    expect(record.body).toMatchObject({ status: "failed", event: { id } });
    const listed = await call(emulator, "GET", `/api/v2/event-streams/${failed}/deliveries?statuses=failed`, { token });
    expect(listed.status).toBe(200);
    expect((await call(emulator, "GET", `/api/v2/event-streams/${delivered}`, { token })).status).toBe(200);
  });
});

import { CloudEvent } from "cloudevents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, emit, getToken, settled, startSink, type Sink } from "./emulator-test-kit.js";
import { basicAuthorization } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";
import { refusedUrl } from "../helpers/explicit-ports.js";

interface Record {
  id: string;
  event_stream_id: string;
  status: string;
  attempts: { status: string; error_message?: string; timestamp: string; duration?: number }[];
  event?: { id: string; type: string; data: { object: unknown }; a0stream: string; a0tenant: string };
}

describe("emulator delivery engine", () => {
  let emulator: Emulator;
  let token: string;
  const sinks: Sink[] = [];
  const sink = async (answer: Parameters<typeof startSink>[0]) => {
    const started = await startSink(answer);
    sinks.push(started);
    return started;
  };
  const history = (streamId: string, eventId: string) => call(emulator, "GET", `/api/v2/event-streams/${streamId}/deliveries/${eventId}`, { token });

  beforeAll(async () => {
    // The tenant's own webhook timeout (10 s): a sink answering late on a loaded machine is
    // still an answer. The timeout itself is tested on an emulator of its own.
    emulator = await startEmulator({ timeScale: 0.01, tenantName: "acme" });
    token = await getToken(emulator);
  });
  afterAll(async () => {
    await emulator.close();
    await Promise.all(sinks.map((s) => s.close()));
  });

  it("when the webhook answers 200 at once, then one structured CloudEvent arrives and the history has no record", async () => {
    const target = await sink(() => 200);
    const streamId = await createStream(emulator, target.url);
    const eventId = await emit(emulator, "user.created", { object: { user_id: "auth0|42", email: "a@example.com" } });

    expect((await settled(emulator, eventId)).status).toBe("succeeded");
    expect(target.requests).toHaveLength(1);
    const request = target.requests[0]!;
    expect(request.headers["content-type"]).toBe("application/json");
    // The CloudEvents SDK as an oracle: the body is a valid event in structured mode.
    expect(new CloudEvent(JSON.parse(request.body) as object, true).validate()).toBe(true);
    const body = JSON.parse(request.body) as Record["event"] & { specversion: string; source: string; time: string };
    expect(body).toMatchObject({ id: eventId, specversion: "1.0", type: "user.created", a0tenant: "acme", a0stream: streamId, data: { object: { user_id: "auth0|42" } } });
    expect(body.id).toMatch(/^evt_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect(body.source).toMatch(/^urn:auth0:/);
    expect(Number.isNaN(Date.parse(body.time))).toBe(false);
    expect((await history(streamId, eventId)).status).toBe(404);
  });

  it("when the webhook answers 503 three times then 200, then the delivery succeeds at the 4th attempt", async () => {
    const target = await sink((n) => (n < 3 ? 503 : 200));
    const streamId = await createStream(emulator, target.url, { types: ["user.updated"] });
    const eventId = await emit(emulator, "user.updated");

    const delivery = await settled(emulator, eventId);
    expect(delivery.status).toBe("succeeded");
    expect(target.requests).toHaveLength(4);
    expect(new Set(target.requests.map((r) => (JSON.parse(r.body) as { id: string }).id))).toEqual(new Set([eventId]));
    expect((await history(streamId, eventId)).status).toBe(404);
  });

  it("when the webhook always answers 503, then the delivery fails for good after 4 attempts spaced about 1:2:4, with the event stored", async () => {
    const slow = await startEmulator({ timeScale: 0.05 });
    try {
      const target = await sink(() => 503);
      const streamId = await createStream(slow, target.url, { types: ["user.deleted"] });
      const eventId = await emit(slow, "user.deleted", { object: { user_id: "auth0|gone" } });

      expect((await settled(slow, eventId)).status).toBe("failed");
      expect(target.requests).toHaveLength(4);
      const [g1, g2, g3] = target.requests.slice(1).map((r, i) => r.at - target.requests[i]!.at) as [number, number, number];
      // Nominal 50, 100, 200 ms. Only lower bounds are load-proof: a busy machine fires
      // timers late, never early, so gaps can bunch but never shrink below the schedule.
      expect(g1).toBeGreaterThanOrEqual(45);
      expect(g2).toBeGreaterThanOrEqual(95);
      expect(g3).toBeGreaterThanOrEqual(190);

      const answer = await call(slow, "GET", `/api/v2/event-streams/${streamId}/deliveries/${eventId}`, { token: await getToken(slow) });
      expect(answer.status).toBe(200);
      const record = answer.body as Record;
      expect(Object.keys(record).sort()).toEqual(["attempts", "event", "event_stream_id", "event_type", "id", "status"]);
      expect(record).toMatchObject({ id: eventId, event_stream_id: streamId, event_type: "user.deleted", status: "failed" });
      expect(record.attempts).toHaveLength(4);
      for (const attempt of record.attempts) {
        expect(attempt).toMatchObject({ status: "failed", error_message: "HTTP 503" });
        expect(typeof attempt.duration).toBe("number");
      }
      const times = record.attempts.map((a) => Date.parse(a.timestamp));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(record.event).toMatchObject({ id: eventId, type: "user.deleted", data: { object: { user_id: "auth0|gone" } }, a0stream: streamId });
    } finally {
      await slow.close();
    }
  });

  it("when the webhook answers 401, then the delivery fails after one attempt, with no retry", async () => {
    const target = await sink(() => 401);
    const streamId = await createStream(emulator, target.url, { types: ["group.created"] });
    const eventId = await emit(emulator, "group.created");

    expect((await settled(emulator, eventId)).status).toBe("failed");
    const record = (await history(streamId, eventId)).body as Record;
    expect(record.status).toBe("failed");
    expect(record.attempts).toEqual([expect.objectContaining({ status: "failed", error_message: "HTTP 401" })]);
    expect(target.requests).toHaveLength(1);
  });

  it("when the webhook does not answer in time or refuses connections, then the attempts say so in the tenant's words", async () => {
    const impatient = await startEmulator({ timeScale: 0.01, tenantName: "acme", webhookTimeoutMs: 150 });
    try {
      const hanging = await sink(() => "hang");
      const slowStream = await createStream(impatient, hanging.url, { types: ["organization.created"] });
      // Nothing listens there (explicit-ports.ts), unlike a port just closed, which another process may take.
      const deadStream = await createStream(impatient, refusedUrl, { types: ["organization.created"] });
      const eventId = await emit(impatient, "organization.created");
      const impatientToken = await getToken(impatient);
      const failed = (streamId: string) => waitFailed(streamId, eventId, (path) => call(impatient, "GET", path, { token: impatientToken }));

      const slowRecord = await failed(slowStream);
      expect(slowRecord.attempts[0]?.error_message).toBe(`Post "${hanging.url}": context deadline exceeded`);
      const deadRecord = await failed(deadStream);
      expect(deadRecord.attempts[0]?.error_message).toMatch(/^Post ".*": dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/);
      expect(deadRecord.attempts).toHaveLength(4);
    } finally {
      await impatient.close();
    }
  });

  it("when a stream's webhook authorization is basic, bearer or custom_header, then each request carries it as configured", async () => {
    const basic = await sink(() => 204);
    const bearer = await sink(() => 204);
    const custom = await sink(() => 204);
    await createStream(emulator, basic.url, { types: ["group.updated"], auth: { method: "basic", username: "tenant", password: "s3cret:x" } });
    await createStream(emulator, bearer.url, { types: ["group.updated"], auth: { method: "bearer", token: "tok-123" } });
    await createStream(emulator, custom.url, { types: ["group.updated"], auth: { method: "custom_header", header_key: "X-Hook-Key", header_value: "k-456" } });
    const eventId = await emit(emulator, "group.updated");

    await until("each of the three endpoints got its delivery", () => basic.requests.length + bearer.requests.length + custom.requests.length === 3, { withinMs: 20_000, everyMs: 10 });
    expect(basic.requests[0]?.headers.authorization).toBe(basicAuthorization("tenant", "s3cret:x"));
    expect(bearer.requests[0]?.headers.authorization).toBe("Bearer tok-123");
    expect(custom.requests[0]?.headers["x-hook-key"]).toBe("k-456");
    expect(custom.requests[0]?.headers.authorization).toBeUndefined();
    expect((JSON.parse(custom.requests[0]!.body) as { id: string }).id).toBe(eventId);
  });

  it("when a failed delivery is redelivered, then a retrying marker and a new round follow, and success removes the record", async () => {
    let healthy = false;
    const target = await sink(() => (healthy ? 200 : 500));
    const streamId = await createStream(emulator, target.url, { types: ["group.deleted"] });
    const eventId = await emit(emulator, "group.deleted");
    await waitFailed(streamId, eventId);

    healthy = true;
    const redeliver = await call(emulator, "POST", `/api/v2/event-streams/${streamId}/redeliver/${eventId}`, { token });
    expect(redeliver.status).toBe(202);
    const delivery = await settled(emulator, eventId);
    expect(delivery.status).toBe("succeeded");
    expect(delivery.attempts.map((a) => a.status)).toEqual(["failed", "failed", "failed", "failed", "retrying", "succeeded"]);
    expect((await history(streamId, eventId)).status).toBe(404);
    expect((await call(emulator, "POST", `/api/v2/event-streams/${streamId}/redeliver/${eventId}`, { token })).status).toBe(409);
  });

  it("when a stream fails enough deliveries in a row, then it is disabled and gets no events until re-enabled, which starts the count afresh", async () => {
    const strict = await startEmulator({ timeScale: 0.01, disableAfterConsecutiveFailures: 2 });
    try {
      const strictToken = await getToken(strict);
      let accept = false;
      const target = await sink(() => (accept ? 200 : 400));
      const streamId = await createStream(strict, target.url);
      await settled(strict, await emit(strict));
      expect(await streamStatus()).toBe("enabled");
      await settled(strict, await emit(strict));
      expect(await streamStatus()).toBe("disabled");

      const ignored = await call(strict, "POST", "/emulator/events", { body: { type: "user.created", data: {} } });
      expect(ignored.body).toMatchObject({ streams: [] });
      expect(target.requests).toHaveLength(2);

      const patch = await call(strict, "PATCH", `/api/v2/event-streams/${streamId}`, { token: strictToken, body: { status: "enabled" } });
      expect(patch.status).toBe(200);
      // Re-enabling starts the count afresh: one more failure is 1 in a row, not 3.
      expect((await settled(strict, await emit(strict))).status).toBe("failed");
      expect(await streamStatus()).toBe("enabled");
      accept = true;
      expect((await settled(strict, await emit(strict))).status).toBe("succeeded");
      expect(target.requests).toHaveLength(4);

      async function streamStatus() {
        return ((await call(strict, "GET", `/api/v2/event-streams/${streamId}`, { token: strictToken })).body as { status: string }).status;
      }
    } finally {
      await strict.close();
    }
  });

  async function waitFailed(
    streamId: string,
    eventId: string,
    get: (path: string) => ReturnType<typeof call> = (path) => call(emulator, "GET", path, { token }),
  ): Promise<Record> {
    let record: Record | undefined;
    await until(
      `the delivery of ${eventId} failed`,
      async () => {
        const answer = await get(`/api/v2/event-streams/${streamId}/deliveries/${eventId}`);
        record = answer.body as Record;
        return answer.status === 200 && record.status === "failed";
      },
      { withinMs: 20_000, everyMs: 10 },
    );
    return record!;
  }
});

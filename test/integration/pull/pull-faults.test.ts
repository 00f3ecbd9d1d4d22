import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { inject } from "vitest";
import { startEmulator, type Emulator } from "../../../src/emulator/start-emulator.js";
import { pullKey } from "../../../src/pull/pull-state.js";
import { capturedLogger } from "../../helpers/captured-logger.js";
import { startSinkServer, type SinkServer } from "../../helpers/sink-server.js";
import { startTestService, type TestService } from "../../helpers/start-test-service.js";
import { getToken } from "../emulator-test-kit.js";
import { changeEventsApi, deliveriesById, emitMany, emitWithOffsets, eventsApi, keptOffset, metricValue, metricsOf, pullEnv, pullStatus, setEventsApiDown } from "./pull-test-kit.js";
import { useCleanup } from "../../helpers/cleanup.js";

describe("the pull when the tenant refuses, expires or goes away", () => {
  const cleanup = useCleanup("each", { timeoutMs: 120000 });

  async function emulatorAndSink(options: Parameters<typeof startEmulator>[0] = {}): Promise<{ emulator: Emulator; sink: SinkServer }> {
    const emulator = await startEmulator({ eventsHeartbeatSeconds: 0.2, ...options });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    return { emulator, sink };
  }

  async function service(env: Record<string, string>, logger = capturedLogger("debug")): Promise<TestService & { lines: Array<Record<string, unknown>> }> {
    const started = await startTestService(env, "all", logger.logger);
    cleanup.push(() => started.close());
    return Object.assign(started, { lines: logger.lines });
  }

  const delta = (before: string, after: string, name: string, labels: string) => metricValue(after, name, labels) - metricValue(before, name, labels);
  const said = (lines: Array<Record<string, unknown>>, level: number, text: string) => lines.filter((line) => line.level === level && String(line.msg).includes(text));

  it("when the kept offset has expired (410), then reading resumes from when the last offset was kept less the overlap: none skipped, the repeats dropped", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const first = await service(pullEnv(emulator, sink.url));
    const prefix = first.config.env.QUEUE_PREFIX;
    await expect.poll(async () => (await pullStatus(first.adminUrl)).state).toBe("connected");
    const early = await emitWithOffsets(emulator, 10);
    await sink.until((requests) => new Set(requests.map((request) => request.headers["webhook-id"])).size === 10);
    // The metrics registry is the process's, shared by both services of this test.
    const before = await metricsOf(first.adminUrl);
    await first.close();
    // As if the worker crashed after storing the 10th event but before keeping offsets past the 5th:
    const redis = new Redis(inject("redisUrl"));
    cleanup.push(async () => void redis.disconnect());
    await redis.hset(pullKey(prefix, "position"), "offset", early.offsets[4]!);
    // ...and the tenant dropped the log up to the 7th event meanwhile; 5 more came after.
    await changeEventsApi(emulator, { expire_through: early.offsets[6]! });
    const late = await emitMany(emulator, 5);

    const second = await service(pullEnv(emulator, sink.url, { QUEUE_PREFIX: prefix }));
    await sink.until((requests) => late.every((id) => requests.some((request) => request.headers["webhook-id"] === id)));
    // The 8th to 10th events come again (from when the 10th's offset was kept, less 300 s) and are dropped as repeats.
    await expect.poll(async () => delta(before, await metricsOf(second.adminUrl), "streamkeeper_pull_events_total", 'result="duplicate"')).toBe(3);
    const seen = deliveriesById(sink.requests);
    expect([...early.ids, ...late].map((id) => seen.get(id)?.length)).toEqual(new Array(15).fill(1));
    expect(delta(before, await metricsOf(second.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="expired"')).toBe(1);
    const warnings = said(second.lines, 40, "can no longer be read");
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0]!.msg)).toContain("PULL_OVERLAP_SECONDS");
  });

  it("when the kept offset has expired (410) and the last stored event's time is ahead of our clock, then reading resumes from when its offset was kept: the events after it arrive", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const first = await service(pullEnv(emulator, sink.url, { PULL_OVERLAP_SECONDS: "1" }));
    const prefix = first.config.env.QUEUE_PREFIX;
    await expect.poll(async () => (await pullStatus(first.adminUrl)).state).toBe("connected");
    // An event the tenant dated an hour ahead (its clock, or a time set by hand).
    const ahead = { id: "evt_ahead_of_our_clock", source: "urn:test", specversion: "1.0", type: "user.created", time: new Date(Date.now() + 3_600_000).toISOString(), data: { object: { user_id: "auth0|ahead" } } };
    const raw = await fetch(`${emulator.url}/emulator/events/raw`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "user.created", data: JSON.stringify({ event: ahead }) }) });
    const { offset } = (await raw.json()) as { offset: string };
    await expect.poll(() => keptOffset(prefix)).toBe(offset);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === ahead.id));
    await first.close();
    // While the pull is down: 3 more, and the tenant drops its log through the first of them.
    const later = await emitWithOffsets(emulator, 3);
    await changeEventsApi(emulator, { expire_through: later.offsets[0]! });

    const second = await service(pullEnv(emulator, sink.url, { QUEUE_PREFIX: prefix, PULL_OVERLAP_SECONDS: "1" }));
    await sink.until((requests) => later.ids.slice(1).every((id) => requests.some((request) => request.headers["webhook-id"] === id)));
    expect(deliveriesById(sink.requests).get(ahead.id)).toHaveLength(1);
    expect(said(second.lines, 40, "can no longer be read").map((line) => line.msg)).toEqual([expect.stringContaining("when the offset was kept")]);
  });

  it("when the last pulled event is back-dated (2001) and then the kept offset expires (410), then reading resumes from when that offset was kept less the overlap, and no gap is reported at error", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const env = { PULL_OVERLAP_SECONDS: "1" };
    const first = await service(pullEnv(emulator, sink.url, env));
    const prefix = first.config.env.QUEUE_PREFIX;
    await expect.poll(async () => (await pullStatus(first.adminUrl)).state).toBe("connected");
    const old = { id: "evt_dated_2001", source: "urn:test", specversion: "1.0", type: "user.created", time: "2001-01-01T00:00:00.000Z", data: { object: { user_id: "auth0|old" } } };
    const raw = await fetch(`${emulator.url}/emulator/events/raw`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "user.created", data: JSON.stringify({ event: old }) }) });
    const { offset } = (await raw.json()) as { offset: string };
    await expect.poll(() => keptOffset(prefix)).toBe(offset);
    await first.close();
    const redis = new Redis(inject("redisUrl"));
    cleanup.push(async () => void redis.disconnect());
    const keptAt = Date.parse((await redis.hget(pullKey(prefix, "position"), "offsetAt"))!);
    const later = await emitWithOffsets(emulator, 3);
    await changeEventsApi(emulator, { expire_through: later.offsets[0]! });

    const second = await service(pullEnv(emulator, sink.url, { ...env, QUEUE_PREFIX: prefix }));
    await sink.until((requests) => later.ids.slice(1).every((id) => requests.some((request) => request.headers["webhook-id"] === id)));
    const resumed = said(second.lines, 40, "can no longer be read");
    expect(resumed.map((line) => line.from)).toEqual([new Date(keptAt - 1000).toISOString()]);
    expect(second.lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(deliveriesById(sink.requests).get(old.id)).toHaveLength(1);
  });

  it("when the kept offset has expired and only heartbeats were kept (no event of the pulled types yet), then reading resumes from when that offset was kept: the events emitted while the pull was down arrive", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const env = { PULL_EVENT_TYPES: "user.deleted", PULL_OVERLAP_SECONDS: "1" };
    const first = await service(pullEnv(emulator, sink.url, env));
    const prefix = first.config.env.QUEUE_PREFIX;
    await expect.poll(async () => (await pullStatus(first.adminUrl)).state).toBe("connected");
    // Events of another type: the pull keeps only the offset of a heartbeat past them, no event time.
    const skipped = await emitWithOffsets(emulator, 5, "user.created");
    await expect.poll(() => keptOffset(prefix)).toBe(skipped.offsets[4]);
    await first.close();
    // While the pull is down: one more of the other type, 3 it wants, then the tenant drops its log past the kept offset.
    const later = await emitWithOffsets(emulator, 1, "user.created");
    const gap = await emitMany(emulator, 3, "user.deleted");
    const gapAt = Date.now();
    await changeEventsApi(emulator, { expire_through: later.offsets[0]! });
    // Past the overlap, so that resuming from now less it would leave the 3 out.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, gapAt + 2000 - Date.now())));

    const second = await service(pullEnv(emulator, sink.url, { ...env, QUEUE_PREFIX: prefix }));
    await sink.until((requests) => gap.every((id) => requests.some((request) => request.headers["webhook-id"] === id)), 60_000);
    expect(said(second.lines, 40, "when the offset was kept")).toHaveLength(1);
  });

  it("when the credentials are wrong, then one log line names them, the attempts back off, and the pull recovers once the client exists", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const started = Date.now();
    const pulling = await service(pullEnv(emulator, sink.url, { MGMT_CLIENT_ID: "pull-client", MGMT_CLIENT_SECRET: "pull-secret" }));
    await expect.poll(async () => metricValue(await metricsOf(pulling.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="auth"')).toBeGreaterThanOrEqual(4);
    const attempts = metricValue(await metricsOf(pulling.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="auth"');
    // Backoff doubling from 1 s: the attempts grow with the log of the time taken, not with the time.
    expect(attempts).toBeLessThanOrEqual(2 + Math.log2((Date.now() - started) / 500));
    const lines = said(pulling.lines, 50, "MGMT_CLIENT_ID");
    expect(lines).toHaveLength(1);
    expect(JSON.stringify(pulling.lines)).not.toContain("pull-secret");
    expect((await pullStatus(pulling.adminUrl)).lastError).toContain("MGMT_CLIENT_ID");

    const response = await fetch(`${emulator.url}/emulator/clients`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_id: "pull-client", client_secret: "pull-secret", scopes: ["read:events"], global: true }),
    });
    expect(response.status).toBe(201);
    await expect.poll(async () => (await pullStatus(pulling.adminUrl)).state).toBe("connected");
    const [id] = await emitMany(emulator, 1);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === id));
    expect((await pullStatus(pulling.adminUrl)).lastError).toBeNull();
  });

  it("when the client lacks read:events, then one log line names the scope, and the pull recovers once it is granted", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const response = await fetch(`${emulator.url}/emulator/clients`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_id: "scoped-client", client_secret: "scoped-secret", scopes: ["read:event_streams"], global: true }),
    });
    expect(response.status).toBe(201);
    const pulling = await service(pullEnv(emulator, sink.url, { MGMT_CLIENT_ID: "scoped-client", MGMT_CLIENT_SECRET: "scoped-secret" }));
    await expect.poll(async () => (await eventsApi(emulator)).attempts["403"] ?? 0).toBeGreaterThanOrEqual(3);
    expect(said(pulling.lines, 50, "read:events")).toHaveLength(1);
    expect(metricValue(await metricsOf(pulling.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="auth"')).toBeGreaterThanOrEqual(3);

    const grant = await fetch(`${emulator.url}/emulator/clients/scoped-client`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ scopes: ["read:event_streams", "read:events"] }) });
    expect(grant.status).toBe(200);
    await expect.poll(async () => (await pullStatus(pulling.adminUrl)).state).toBe("connected");
    const [id] = await emitMany(emulator, 1);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === id));
  });

  it("when the tenant is down for a while (60 s scaled to 6 s), then one log line says so, the attempts back off, and the events emitted meanwhile arrive after", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const pulling = await service(pullEnv(emulator, sink.url));
    await expect.poll(async () => (await pullStatus(pulling.adminUrl)).state).toBe("connected");
    const before = await metricsOf(pulling.adminUrl);
    const down = Date.now();
    await setEventsApiDown(emulator, true);
    const during = await emitMany(emulator, 20);
    // 6 s of outage, measured by the emulator's count of refused attempts rather than a sleep.
    await expect.poll(async () => Date.now() - down >= 6000 && ((await eventsApi(emulator)).attempts["0"] ?? 0) >= 2, { interval: 250 }).toBe(true);
    const refused = (await eventsApi(emulator)).attempts["0"] ?? 0;
    expect(refused).toBeLessThanOrEqual(2 + Math.log2((Date.now() - down) / 500));
    // Between attempts: one in flight reads `connecting`.
    await expect.poll(async () => (await pullStatus(pulling.adminUrl)).state).toBe("waiting");
    await setEventsApiDown(emulator, false);
    await sink.until((requests) => during.every((id) => requests.some((request) => request.headers["webhook-id"] === id)), 60_000);
    const after = await metricsOf(pulling.adminUrl);
    expect(delta(before, after, "streamkeeper_pull_reconnects_total", 'reason="error"')).toBeGreaterThanOrEqual(refused);
    expect(said(pulling.lines, 40, "cannot reach the tenant")).toHaveLength(1);
    expect(deliveriesById(sink.requests).size).toBe(20);
  });

  it("when the tenant's connection limit is taken (429 with Retry-After: 3), then the pull waits the 3 s it is told between attempts, not its own 1 s backoff, and connects once a connection is free", async () => {
    const { emulator, sink } = await emulatorAndSink({ eventsConnections: 1 });
    // 3 s: three times the longest first wait of its own backoff (0.5 to 1 s), which would show as a shorter gap.
    await changeEventsApi(emulator, { retry_after_seconds: 3 });
    // Another consumer of the same tenant holds the plan's one connection.
    const other = new AbortController();
    const held = await fetch(`${emulator.url}/api/v2/events`, { headers: { authorization: `Bearer ${await getToken(emulator)}`, accept: "text/event-stream" }, signal: other.signal });
    expect(held.status).toBe(200);
    const pulling = await service(pullEnv(emulator, sink.url));
    await expect.poll(async () => metricValue(await metricsOf(pulling.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="rate_limited"'), { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    // When the emulator saw each refused attempt: 3 s apart at least (its own backoff would be 1 s, then 2).
    const refusedAt = (await eventsApi(emulator)).recent.filter((request) => request.status === 429).map((request) => request.at);
    expect(refusedAt.length).toBeGreaterThanOrEqual(2);
    expect(Math.min(...refusedAt.slice(1).map((at, index) => at - refusedAt[index]!))).toBeGreaterThanOrEqual(2_900);
    expect((await pullStatus(pulling.adminUrl)).lastError).toContain("rate limited");
    other.abort();
    await expect.poll(async () => (await pullStatus(pulling.adminUrl)).state, { timeout: 20_000 }).toBe("connected");
    const [id] = await emitMany(emulator, 1);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === id));
    expect((await eventsApi(emulator)).maxOpen).toBe(1);
  });

  it("when the tenant ends the stream with `event: error`, then one warning quotes it, the pull reconnects from the kept offset, and every event before and after arrives once", async () => {
    const { emulator, sink } = await emulatorAndSink();
    const pulling = await service(pullEnv(emulator, sink.url));
    await expect.poll(async () => (await pullStatus(pulling.adminUrl)).state).toBe("connected");
    const before = await metricsOf(pulling.adminUrl);
    const early = await emitWithOffsets(emulator, 5);
    await expect.poll(() => keptOffset(pulling.config.env.QUEUE_PREFIX)).toBe(early.offsets[4]);
    await changeEventsApi(emulator, { end_with_error: "the event log is being moved" });
    await expect.poll(async () => delta(before, await metricsOf(pulling.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="error"')).toBe(1);
    const late = await emitWithOffsets(emulator, 5);
    await expect.poll(() => keptOffset(pulling.config.env.QUEUE_PREFIX)).toBe(late.offsets[4]);
    await sink.until((requests) => new Set(requests.map((request) => request.headers["webhook-id"])).size === 10);
    const seen = deliveriesById(sink.requests);
    expect([...early.ids, ...late.ids].map((id) => seen.get(id)?.length)).toEqual(new Array(10).fill(1));
    expect(said(pulling.lines, 40, "ended the Events API stream with an error").map((line) => line.msg)).toEqual([expect.stringContaining("the event log is being moved")]);
    // Two connections in all: the one the error ended, and the one reading now.
    expect((await eventsApi(emulator)).recent.map((request) => request.status)).toEqual([200, 0]);
  });

  it("when the tenant closes a stream on purpose, then the pull reconnects after the wait its `retry:` asks for", async () => {
    const { emulator, sink } = await emulatorAndSink({ eventsCycleSeconds: 0.5, eventsRetryMs: 2000 });
    const pulling = await service(pullEnv(emulator, sink.url));
    await expect.poll(async () => (await eventsApi(emulator)).attempts["200"] ?? 0, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    // Each connection lasts 0.5 s; the next comes 2 s after its close.
    const connectedAt = (await eventsApi(emulator)).recent.filter((request) => request.status === 200).map((request) => request.at);
    expect(Math.min(...connectedAt.slice(1).map((at, index) => at - connectedAt[index]!))).toBeGreaterThanOrEqual(2_400);
    expect(metricValue(await metricsOf(pulling.adminUrl), "streamkeeper_pull_reconnects_total", 'reason="cycled"')).toBeGreaterThanOrEqual(2);
  });
});

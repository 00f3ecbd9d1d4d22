import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { adminHeaders } from "../helpers/credentials.js";
import { control, createStream, emit, tenantEnv } from "./emulator-test-kit.js";
import { adminToken, failedCount, until } from "./sweep-test-kit.js";

/**
 * One window of the tenant's failed deliveries, read by the service in this process
 * (POST /admin/sweep/window, what `reconcile --since` asks for): every page of the list,
 * in pages of 100 (README.md#the-sweep-failed-deliveries-found-without-being-told: about
 * one list call per 100 failed deliveries), each record's outcome, the reconcile counter.
 */
describe("a window of failed deliveries, page by page", () => {
  let emulator: Emulator;
  let sink: SinkServer;
  let service: TestService;
  let streamId: string;
  let created: string[];
  let other: string;
  let emptyStreamId: string;

  interface Line {
    eventId?: string;
    streamId?: string;
    outcome?: string;
    done?: boolean;
    pages?: number;
    streams?: string[];
    error?: string;
    unlisted?: Array<{ streamId: string; from: string; to: string; reason: string }>;
  }
  const window = async (body: Record<string, unknown>): Promise<{ results: Line[]; done: Line }> => {
    const answer = await fetch(`${service.adminUrl}/admin/sweep/window`, {
      method: "POST",
      headers: adminHeaders(adminToken, { "content-type": "application/json" }),
      // Until a minute ahead: a window's end is exclusive, in whole seconds, and the failures of the last second would fall outside one ending now.
      body: JSON.stringify({ since: new Date(Date.now() - 3_600_000).toISOString(), until: new Date(Date.now() + 60_000).toISOString(), ...body }),
    });
    expect(answer.status).toBe(200);
    const lines = (await answer.text()).trim().split("\n").map((text) => JSON.parse(text) as Line);
    expect(lines.at(-1)?.done, JSON.stringify(lines.at(-1))).toBe(true);
    return { results: lines.slice(0, -1), done: lines.at(-1)! };
  };
  const recoveredCount = async () => {
    const line = (await (await fetch(`${service.adminUrl}/metrics`)).text()).split("\n").find((text) => text.startsWith('streamkeeper_reconcile_total{outcome="recovered"}'));
    return line ? Number(line.split(" ").at(-1)) : 0;
  };

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.001 });
    sink = await startSinkServer();
    // The sweep is off: only the windows asked for here act.
    service = await startTestService({ ...tenantEnv(emulator), DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken, RECONCILE_SWEEP_INTERVAL_SECONDS: "0" });
    // A wrong password: our receiver answers 401 and the tenant fails each delivery at once, payload kept.
    const auth = { method: "basic" as const, username: testCredentials.username, password: "wrong" };
    streamId = await createStream(emulator, `${service.publicUrl}/webhooks`, { auth, types: ["user.created", "organization.created"] });
    // 130 of one type (two pages of 100, more than the 20 handled at once), 1 of another.
    created = (await control<{ ids: string[] }>(emulator, "/events", { type: "user.created", data: { object: { user_id: "auth0|window" } }, count: 130 })).ids;
    other = await emit(emulator, "organization.created", { object: { id: "org_window", name: "window" } });
    await until("131 failed deliveries", async () => (await failedCount(emulator, streamId)) === 131);
    emptyStreamId = await createStream(emulator, `${service.publicUrl}/webhooks`, { auth, types: ["user.updated"] });
  }, 120_000);
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await emulator?.close();
  });

  it("when a dry run reads a window of 131 failed deliveries, then it reads 2 pages, says would_recover for each with its stream, and recovers and counts nothing", async () => {
    const before = await recoveredCount();
    const { results, done } = await window({ streams: [streamId], dryRun: true });
    expect(done).toMatchObject({ pages: 2, streams: [streamId] });
    expect(results).toHaveLength(131);
    expect(results.map((line) => line.eventId).sort()).toEqual([...created, other].sort());
    expect(new Set(results.map((line) => `${line.outcome} ${line.streamId}`))).toEqual(new Set([`would_recover ${streamId}`]));
    expect(await recoveredCount()).toBe(before);
    expect(sink.requests).toHaveLength(0);
  });

  it("when the window asks for one exact type, then the tenant is asked for that type only (one page); a pattern is matched here, over every page", async () => {
    const exact = await window({ streams: [streamId], type: "organization.created", dryRun: true });
    expect(exact.done.pages).toBe(1);
    expect(exact.results.map((line) => line.eventId)).toEqual([other]);
    const pattern = await window({ streams: [streamId], type: "organization.*", dryRun: true });
    expect(pattern.done.pages).toBe(2);
    expect(pattern.results.map((line) => line.eventId)).toEqual([other]);
  });

  it("when the window ends before the failures, or a stream has none, then nothing is listed", async () => {
    const before = await window({ streams: [streamId], until: new Date(Date.now() - 1_800_000).toISOString(), dryRun: true });
    expect(before.results).toEqual([]);
    const none = await window({ streams: [emptyStreamId], dryRun: true });
    expect(none.results).toEqual([]);
    expect(none.done.pages).toBe(1);
  });

  it("when the tenant lists deliveries as a bare array (no cursor) filtered on attempt times, then each full page is read again as the halves of its span: every failed delivery of a spread-out window is listed once, and what one second holds beyond a page is said as unlisted", async () => {
    const listShape = (shape: Record<string, string>) => control(emulator, "/deliveries-list", shape, "PUT");
    const auth = { method: "basic" as const, username: testCredentials.username, password: "wrong" };
    const spread = await createStream(emulator, `${service.publicUrl}/webhooks`, { auth, types: ["user.deleted"] });
    // 3 bursts of 70, in 3 different seconds: more than a page in all, less in any second.
    const emitted: string[] = [];
    for (let burst = 0; burst < 3; burst++) {
      if (burst > 0) await new Promise((resolve) => setTimeout(resolve, 1_100));
      emitted.push(...(await control<{ ids: string[] }>(emulator, "/events", { type: "user.deleted", data: { object: { user_id: "auth0|spread" } }, count: 70 })).ids);
    }
    const dense = await createStream(emulator, `${service.publicUrl}/webhooks`, { auth, types: ["user.updated"] });
    // 120 within one second, early in it.
    while (Date.now() % 1000 > 200) await new Promise((resolve) => setTimeout(resolve, 10));
    await control(emulator, "/events", { type: "user.updated", data: { object: { user_id: "auth0|dense" } }, count: 120 });
    await until("failed deliveries of both streams", async () => (await failedCount(emulator, spread)) === 210 && (await failedCount(emulator, dense)) === 120);
    await listShape({ shape: "array", dates: "attempt" });
    try {
      const { results } = await window({ streams: [spread], dryRun: true });
      expect(results.map((line) => line.eventId).sort()).toEqual([...emitted].sort());
      expect(new Set(results.map((line) => line.outcome))).toEqual(new Set(["would_recover"]));

      await listShape({ dates: "event" });
      const crowded = await window({ streams: [dense], dryRun: true });
      expect(new Set(crowded.results.map((line) => line.outcome))).toEqual(new Set(["would_recover"]));
      expect(crowded.results).toHaveLength(100);
      // What that second holds beyond the page has no id to show: said once, for its second.
      expect(crowded.done.unlisted).toEqual([
        {
          streamId: dense,
          from: expect.stringMatching(/:\d\d\.000Z$/),
          to: expect.stringMatching(/:\d\d\.000Z$/),
          reason: "the tenant listed a full page with no cursor (a bare array) and one second holds more than a page: failed deliveries beyond its 100 cannot be listed; recover them by id",
        },
      ]);
      expect(Date.parse(crowded.done.unlisted![0]!.to) - Date.parse(crowded.done.unlisted![0]!.from)).toBe(1000);
    } finally {
      await listShape({ shape: "object", dates: "event" });
    }
  });

  it("when the window is run for real, then each of its events is recovered once, counted recovered, and a second run finds each already here", async () => {
    const before = await recoveredCount();
    const { results, done } = await window({ streams: [streamId] });
    expect(done.pages).toBe(2);
    expect(results).toHaveLength(131);
    expect(new Set(results.map((line) => `${line.outcome} ${line.streamId}`))).toEqual(new Set([`recovered ${streamId}`]));
    expect(await recoveredCount()).toBe(before + 131);
    await sink.untilReceived(131, 60_000);
    expect(new Set(sink.requests.map((request) => request.headers["webhook-id"]))).toEqual(new Set([...created, other]));

    const again = await window({ streams: [streamId] });
    expect(new Set(again.results.map((line) => line.outcome))).toEqual(new Set(["already_received"]));
    expect(again.results).toHaveLength(131);
    expect(await recoveredCount()).toBe(before + 131);
    expect(sink.requests).toHaveLength(131);
  });
});

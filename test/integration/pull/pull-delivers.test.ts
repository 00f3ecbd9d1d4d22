import { describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../../src/emulator/start-emulator.js";
import type { Logger } from "../../../src/logging/logger.js";
import { runCli } from "../../chaos/run-cli.js";
import { startSinkServer, type SinkServer } from "../../helpers/sink-server.js";
import { startTestService, type TestService } from "../../helpers/start-test-service.js";
import { adminToken, keptOffset, emitMany, eventsApi, metricValue, metricsOf, pullEnv, pullStatus } from "./pull-test-kit.js";
import { useCleanup } from "../../helpers/cleanup.js";
import { capturedLogger } from "../../helpers/captured-logger.js";
import { adminHeaders } from "../../helpers/credentials.js";

describe("pulling the tenant's event log", () => {
  const cleanup = useCleanup("each", { timeoutMs: 240000 });

  async function setUp(emulatorOptions: Parameters<typeof startEmulator>[0], env: Record<string, string> = {}, logger?: Logger) {
    const emulator: Emulator = await startEmulator(emulatorOptions);
    cleanup.push(() => emulator.close());
    const sink: SinkServer = await startSinkServer();
    cleanup.push(() => sink.close());
    const service: TestService = await startTestService(pullEnv(emulator, sink.url, env), "all", logger);
    cleanup.push(() => service.close());
    return { emulator, sink, service };
  }

  it("when 2,000 events are emitted while the tenant closes the connection every 2 s, then each is delivered once to the route, with origin pull", async () => {
    const logs = capturedLogger("warn");
    const { emulator, sink, service } = await setUp({ eventsCycleSeconds: 2, eventsRetryMs: 100, eventsHeartbeatSeconds: 0.2 }, {}, logs.logger);
    await expect.poll(async () => (await pullStatus(service.adminUrl)).state).toBe("connected");
    const before = await metricsOf(service.adminUrl);
    const movedBy = async (name: string, labels: string) => metricValue(await metricsOf(service.adminUrl), name, labels) - metricValue(before, name, labels);
    const ids = await emitMany(emulator, 2000);
    // An event emitted after one of the tenant's closes is read by a later connection, after
    // whatever that connection read again: once its offset is kept, every repeat is counted.
    await expect.poll(() => movedBy("streamkeeper_pull_reconnects_total", 'reason="cycled"')).toBeGreaterThanOrEqual(1);
    ids.push(...(await emitMany(emulator, 1)));
    const head = (await eventsApi(emulator)).head;
    await expect.poll(async () => (await keptOffset(service.config.env.QUEUE_PREFIX)) === head).toBe(true);
    // Every job finished: no repeat can still be on its way to the sink.
    await expect.poll(() => movedBy("streamkeeper_dispatch_total", 'route="default",outcome="delivered"')).toBe(ids.length);

    const delivered = sink.requests.map((request) => request.headers["webhook-id"]);
    expect(delivered).toHaveLength(ids.length);
    expect(new Set(delivered)).toEqual(new Set(ids));
    expect(new Set(sink.requests.map((request) => request.headers["x-streamkeeper-origin"]))).toEqual(new Set(["pull"]));
    expect(await movedBy("streamkeeper_events_received_total", 'type="user.created",origin="pull"')).toBe(ids.length);
    // A connection ends only once every message it read is stored and its offset kept, so the
    // tenant's closes repeat nothing. Only a read cut short (the lease lost by a stalled worker,
    // a store failing) leaves the stores in flight, at most 32 (PullerDeps.inFlight), to be read again.
    const pulled = (result: string) => movedBy("streamkeeper_pull_events_total", `result="${result}"`);
    const cutShort = logs.lines.filter((line) => /Events API lease|could not store a pulled event/.test(String(line.msg)));
    expect(await pulled("stored")).toBe(ids.length);
    expect(await pulled("duplicate"), JSON.stringify(cutShort)).toBeLessThanOrEqual(32 * cutShort.length);
    expect((await eventsApi(emulator)).maxOpen).toBe(1);
  });

  it("when a pulled event is not JSON or not a CloudEvent, then it is kept aside with its raw body, counted, and the events after it are delivered", async () => {
    const { emulator, sink, service } = await setUp({ eventsHeartbeatSeconds: 0.2 });
    await expect.poll(async () => (await pullStatus(service.adminUrl)).state).toBe("connected");
    // The metrics registry is the process's: count from here.
    const before = await metricsOf(service.adminUrl);
    for (const data of ["{not json", JSON.stringify({ offset: "x", event: { id: "evt_broken", type: "user.created" } })]) {
      const response = await fetch(`${emulator.url}/emulator/events/raw`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "user.created", data }) });
      expect(response.status).toBe(202);
    }
    const [after] = await emitMany(emulator, 1);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === after));
    const metrics = await metricsOf(service.adminUrl);
    const counted = (result: string) => metricValue(metrics, "streamkeeper_pull_events_total", `result="${result}"`) - metricValue(before, "streamkeeper_pull_events_total", `result="${result}"`);
    expect(counted("poison")).toBe(2);
    expect(counted("stored")).toBe(1);
    expect(sink.requests.map((request) => request.headers["webhook-id"])).toEqual([after]);
    // Each kept aside with its raw body and why, shown by the admin API and `pull status`.
    const { poison } = await pullStatus(service.adminUrl);
    expect(poison.count).toBe(2);
    expect(poison.newest.map((kept) => kept.raw).sort()).toEqual(["{not json", JSON.stringify({ offset: "x", event: { id: "evt_broken", type: "user.created" } })].sort());
    expect(poison.newest.map((kept) => kept.reason).sort()).toEqual(["event.source is required (CloudEvents 1.0)", "the message data is not JSON"].sort());
    const fewer = (await (await fetch(`${service.adminUrl}/admin/pull?poison=1`, { headers: adminHeaders(adminToken) })).json()) as { poison: { count: number; newest: unknown[] } };
    expect([fewer.poison.count, fewer.poison.newest.length]).toEqual([2, 1]);
    const refused = await fetch(`${service.adminUrl}/admin/pull?poison=all`, { headers: adminHeaders(adminToken) });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toBe('poison must be a whole number from 0 to 1000 (how many of the newest poison events to show), not "all"');
    const text = await runCli(["pull", "status"], { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken });
    expect(text.stdout).toMatch(new RegExp(`^poison\\s+2 kept aside \\(not JSON or not a CloudEvent\\); the newest at ${poison.newest[0]!.at}, offset .+: ${poison.newest[0]!.reason.replace(/[().]/g, "\\$&")} \\(pull status --json`, "m"));
  });

  it("when an event arrives by pull, then the event view shows origin pull, and `pull status` prints the state through the service's admin API", async () => {
    const { emulator, sink, service } = await setUp({ eventsHeartbeatSeconds: 0.2 });
    await expect.poll(async () => (await pullStatus(service.adminUrl)).state).toBe("connected");
    const [id] = await emitMany(emulator, 1);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === id));
    const view = await fetch(`${service.adminUrl}/admin/events/${id}`, { headers: adminHeaders(adminToken) });
    expect(view.status).toBe(200);
    expect(((await view.json()) as { arrival: { origin: string } }).arrival.origin).toBe("pull");
    await expect.poll(async () => (await pullStatus(service.adminUrl)).lastEventAt).not.toBeNull();

    const env = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken };
    const json = await runCli(["pull", "status", "--json"], env);
    expect(json.code, json.stderr).toBe(0);
    const status = JSON.parse(json.stdout) as { state: string; holder: string; lastEventAt: string };
    expect(status.state).toBe("connected");
    expect(status.holder).toContain(`:${process.pid}:`);
    const text = await runCli(["pull", "status"], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^state\s+connected$/m);
    expect(text.stdout).toMatch(/^poison\s+none$/m);
    expect(text.stdout).toContain(status.lastEventAt);

    // No service there: said in one line, exit 1.
    const nobody = await runCli(["pull", "status"], { ADMIN_URL: "http://127.0.0.1:9", ADMIN_TOKEN: adminToken });
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/^error: no service answers at http:\/\/127\.0\.0\.1:9 .*start it/);
    // A token the service refuses: a setting to change, exit 2 as every command's.
    const refused = await runCli(["pull", "status"], { ...env, ADMIN_TOKEN: "not-the-service-token" });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: the service at .* refused this shell's ADMIN_TOKEN: set ADMIN_TOKEN to the service's admin token/);
  });
});

import { describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { startSinkServer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";
import { call, createStream, emit, getToken, settled, tenantEnv } from "./emulator-test-kit.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { useCleanup } from "../helpers/cleanup.js";
import { until } from "../helpers/until.js";

const webhookAuth = { method: "basic", username: "tenant", password: "stream-health-pw" } as const;
/** Small, so a few failed deliveries disable the stream (the tenant's is 500). */
const disableAfter = 3;

/** One sample's value from Prometheus text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((row) => row.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function metric(service: ServiceProcess, series: string): Promise<number | undefined> {
  return sample(await (await fetch(`${service.adminUrl}/metrics`)).text(), series);
}

/**
 * The service in its own process (`start --role all`) against the emulator: the stream
 * points at the service's public URL (a front door the test holds), which stays the same
 * across a restart, as a real deployment's URL does.
 */
describe("stream health: a disabled stream is seen, and with STREAM_AUTO_ENABLE brought back", () => {
  const cleanup = useCleanup("each", { quiet: true });

  async function disabledWhileDown(autoEnable: boolean) {
    const emulator: Emulator = await startEmulator({ timeScale: 0.01, disableAfterConsecutiveFailures: disableAfter });
    cleanup.push(() => emulator.close());
    const sink: SinkServer = await startSinkServer();
    cleanup.push(() => sink.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const ours = await createStream(emulator, `${publicUrl}/webhooks`, { auth: webhookAuth });
    // Points elsewhere: never ours, so never watched (nor enabled) by this service.
    const elsewhere = await createStream(emulator, sink.url, { auth: webhookAuth, types: ["user.deleted"] });
    const env = serviceProcessEnv({
      ...tenantEnv(emulator),
      WEBHOOK_AUTH: "basic",
      WEBHOOK_USERNAME: webhookAuth.username,
      WEBHOOK_PASSWORD: webhookAuth.password,
      DOWNSTREAM_URL: sink.url,
      PUBLIC_URL: publicUrl,
      STREAM_WATCH_INTERVAL_SECONDS: "1",
      STREAM_AUTO_ENABLE: String(autoEnable),
      RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
      LOG_LEVEL: "info",
    });
    const enabledSeries = `streamkeeper_stream_enabled{stream="${ours}"}`;

    let service = await startServiceProcess("all", env);
    cleanup.push(() => service.kill());
    door.open(service.publicUrl!);
    await until("the swept stream shows enabled", async () => (await metric(service, enabledSeries)) === 1);
    expect(await metric(service, `streamkeeper_stream_enabled{stream="${elsewhere}"}`)).toBeUndefined();
    const live = await emit(emulator);
    await sink.until((requests) => requests.some((request) => request.body.includes(live)), 30_000);

    // The service is gone: every delivery fails its 4 attempts, and the tenant disables the stream.
    await service.kill();
    door.shut();
    const failed: string[] = [];
    for (let i = 0; i < disableAfter; i++) {
      const eventId = await emit(emulator);
      failed.push(eventId);
      expect((await settled(emulator, eventId, 30_000)).status).toBe("failed");
    }
    expect(await streamStatus(emulator, ours)).toBe("disabled");
    // What the tenant had while the stream was disabled: not sent, not kept.
    const dropped = await call(emulator, "POST", "/emulator/events", { body: { type: "user.created", data: { object: { user_id: "auth0|lost" } } } });
    expect(dropped.body).toMatchObject({ streams: [] });

    service = await startServiceProcess("all", env);
    cleanup.push(() => service.kill());
    door.open(service.publicUrl!);
    return { emulator, sink, service, ours, elsewhere, failed, dropped: (dropped.body as { id: string }).id, enabledSeries };
  }

  it("when the tenant disabled the stream while the service was down, then the restarted service shows 0 within seconds, logs it as an error and leaves it disabled", async () => {
    const { emulator, service, ours, elsewhere, enabledSeries } = await disabledWhileDown(false);
    await until("the disabled stream shows 0", async () => (await metric(service, enabledSeries)) === 0);
    // Three more checks, and it is still disabled: without STREAM_AUTO_ENABLE only a person enables it.
    const runs = (await metric(service, 'streamkeeper_stream_watch_runs_total{result="ok"}')) ?? 0;
    await until("three more checks", async () => ((await metric(service, 'streamkeeper_stream_watch_runs_total{result="ok"}')) ?? 0) >= runs + 3);
    expect(await streamStatus(emulator, ours)).toBe("disabled");
    expect(await metric(service, enabledSeries)).toBe(0);
    expect(await metric(service, `streamkeeper_stream_auto_enable_total{stream="${ours}"}`)).toBeUndefined();
    // The log line comes through the process's stdout, the gauge through HTTP: either may be first.
    const logged = await until("the error naming the stream", () => logLines(service).find((line) => line.level === 50 && line.streamId === ours));
    expect(logged.msg).toMatch(/stream is disabled: .*lost.*streamkeeper streams update est_\w+ --status enabled, or set STREAM_AUTO_ENABLE=true/);
    expect(await streamStatus(emulator, elsewhere)).toBe("enabled");
  });

  it("when STREAM_AUTO_ENABLE is on, then the restarted service enables the stream again, says so at warn, the sweep recovers the failed deliveries, and a new event is delivered live", async () => {
    const { emulator, sink, service, ours, failed, dropped, enabledSeries } = await disabledWhileDown(true);
    await until("the stream is enabled again", async () => (await streamStatus(emulator, ours)) === "enabled");
    await until("the gauge shows it", async () => (await metric(service, enabledSeries)) === 1);
    expect(await metric(service, `streamkeeper_stream_auto_enable_total{stream="${ours}"}`)).toBe(1);
    const warned = await until("the warning naming the stream", () => logLines(service).find((line) => line.level === 40 && line.streamId === ours && /enabled it again/.test(String(line.msg))));
    expect(warned.msg).toMatch(/STREAM_AUTO_ENABLE=true/);

    // What failed before the tenant disabled the stream is in its delivery history: the sweep brings it back.
    const recovered = (requests: SinkRequest[]) => failed.every((eventId) => requests.some((request) => request.body.includes(eventId) && request.headers["x-streamkeeper-origin"] === "reconcile"));
    await sink.until(recovered, 30_000);

    const live = await emit(emulator);
    expect((await settled(emulator, live, 30_000)).status).toBe("succeeded");
    const delivered = await sink.until((requests) => requests.some((request) => request.body.includes(live)), 30_000);
    expect(delivered.find((request) => request.body.includes(live))?.headers["x-streamkeeper-origin"]).toBe("webhook");
    // The event of the time it was disabled: never sent, never kept, so nothing brings it back.
    expect(delivered.some((request) => request.body.includes(dropped))).toBe(false);
  });
});

async function streamStatus(emulator: Emulator, streamId: string): Promise<string> {
  const answer = await call(emulator, "GET", `/api/v2/event-streams/${streamId}`, { token: await getToken(emulator) });
  return (answer.body as { status: string }).status;
}

function logLines(service: ServiceProcess): Array<Record<string, unknown>> {
  return service
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

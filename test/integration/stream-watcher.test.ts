import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { pino } from "pino";
import { describe, expect, inject, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { registry } from "../../src/metrics/registry.js";
import { createStreamWatcher, type StreamWatcher } from "../../src/streams/create-stream-watcher.js";
import { createTenantClient, type TenantClient } from "../../src/tenant/create-tenant-client.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { call, createStream, getToken } from "./emulator-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";
import { until } from "../helpers/until.js";

async function value(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = (await registry.getMetricsAsJSON()).find((each) => each.name === name);
  const found = metric?.values.find((sample) => Object.entries(labels).every(([key, label]) => sample.labels[key] === label));
  return found?.value;
}

/** The watcher in this process, against the emulator and the test Redis, to drive readiness and the tenant directly. */
describe("stream watcher", () => {
  const cleanup = useCleanup("each", { quiet: true });

  async function setUp() {
    const emulator: Emulator = await startEmulator({ timeScale: 0.01 });
    cleanup.push(() => emulator.close());
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: 1 });
    cleanup.push(() => redis.quit());
    const publicUrl = "https://hooks.example.com";
    const streamId = await createStream(emulator, `${publicUrl}/webhooks`);
    const tenant: TenantClient = createTenantClient({
      apiBaseUrl: emulator.apiBaseUrl,
      tokenUrl: emulator.tokenUrl,
      audience: emulator.audience,
      clientId: "emulator-client",
      clientSecret: "emulator-secret",
    });
    const token = await getToken(emulator);
    const setStatus = async (status: string) => expect((await call(emulator, "PATCH", `/api/v2/event-streams/${streamId}`, { token, body: { status } })).status).toBe(200);
    const status = async () => ((await call(emulator, "GET", `/api/v2/event-streams/${streamId}`, { token })).body as { status: string }).status;
    const queuePrefix = `watch-${randomUUID().slice(0, 8)}`;
    /** A watcher of this tenant's streams on this Redis; a test gives what it changes. */
    const watchTenant = (options: Partial<Parameters<typeof createStreamWatcher>[0]>) =>
      watch({
        listStreams: () => tenant.eventStreams({ take: 100 }),
        enableStream: (id) => tenant.updateEventStream(id, { status: "enabled" }),
        ready: async () => true,
        scope: { publicUrl },
        redis,
        queuePrefix,
        intervalMs: 1000,
        autoEnable: false,
        ...options,
      });
    return { streamId, tenant, setStatus, status, watchTenant };
  }

  function watch(options: Omit<Parameters<typeof createStreamWatcher>[0], "logger" | "logRepeatsEveryMs"> & Partial<Parameters<typeof createStreamWatcher>[0]>): StreamWatcher {
    const watcher = createStreamWatcher({ logger: pino({ level: "silent" }), logRepeatsEveryMs: 60_000, ...options });
    cleanup.push(() => watcher.close());
    return watcher;
  }

  it("when a disabled stream is found while the service cannot store events, then it is enabled only once it can", async () => {
    const { streamId, setStatus, status, watchTenant } = await setUp();
    await setStatus("disabled");
    let canStore = false;
    let asked = 0;
    watchTenant({ ready: async () => (asked++, canStore), intervalMs: 5000, autoEnable: true, readyPollMs: 20 });
    await until("the gauge shows the stream disabled", async () => (await value("streamkeeper_stream_enabled", { stream: streamId })) === 0, { everyMs: 20 });
    await until("readiness asked again and again", async () => asked >= 3, { everyMs: 20 });
    expect(await status()).toBe("disabled");
    canStore = true;
    await until("enabled once the service can store events", async () => (await status()) === "enabled", { everyMs: 20 });
    await until("the gauge shows it", async () => (await value("streamkeeper_stream_enabled", { stream: streamId })) === 1, { everyMs: 20 });
  });

  it("when the tenant disables the stream again after an auto-enable, then the next enable waits at least two intervals, and the backoff shows meanwhile", async () => {
    const { streamId, tenant, setStatus, status, watchTenant } = await setUp();
    await setStatus("disabled");
    const intervalMs = 1500;
    const enabledAt: number[] = [];
    watchTenant({
      enableStream: async (id) => {
        const stream = await tenant.updateEventStream(id, { status: "enabled" });
        enabledAt.push(Date.now());
        return stream;
      },
      intervalMs,
      autoEnable: true,
    });
    await until("enabled", async () => enabledAt.length === 1, { everyMs: 20 });
    await setStatus("disabled");
    await until("the backoff shows", async () => ((await value("streamkeeper_stream_auto_enable_backoff_seconds", { stream: streamId })) ?? 0) > 0, { everyMs: 20 });
    await until("enabled again", async () => enabledAt.length === 2, { everyMs: 20 });
    expect(enabledAt[1]! - enabledAt[0]!).toBeGreaterThanOrEqual(2 * intervalMs);
    expect(await status()).toBe("enabled");
    expect(await value("streamkeeper_stream_auto_enable_total", { stream: streamId })).toBe(2);
  });

  it("when a stream stays disabled over several checks, then it is logged once at once, not at every check (the rest are counted into one line per LOG_REPEAT_INTERVAL_SECONDS)", async () => {
    const { streamId, tenant, setStatus, watchTenant } = await setUp();
    await setStatus("disabled");
    const { logger, lines } = capturedLogger();
    const lists = { count: 0 };
    watchTenant({ listStreams: () => (lists.count++, tenant.eventStreams({ take: 100 })), intervalMs: 200, logger, logRepeatsEveryMs: 600_000 });
    // Checks run one after the other: the fourth list means three checks saw the stream disabled.
    await until("four checks", async () => lists.count >= 4, { everyMs: 20 });
    const disabled = lines.filter((line) => String(line.msg).startsWith("stream is disabled"));
    expect(disabled).toHaveLength(1);
    expect(disabled[0]).toMatchObject({ level: 50, streamId, msg: expect.stringContaining(`streamkeeper streams update ${streamId} --status enabled`) });
  });

  it("when three watchers share the service's Redis, then the tenant's stream list is read once per interval, not three times", async () => {
    const { tenant, watchTenant } = await setUp();
    const intervalMs = 1000;
    const lists = { count: 0 };
    const started = Date.now();
    for (let i = 0; i < 3; i++) watchTenant({ listStreams: () => (lists.count++, tenant.eventStreams({ take: 100 })), intervalMs });
    await until("three checks", async () => lists.count >= 3, { everyMs: 20 });
    // One claim per interval: three checks take at least two whole intervals, whoever makes them.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2 * intervalMs);
  });
});

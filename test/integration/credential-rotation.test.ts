import { createServer, connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { registry } from "../../src/metrics/registry.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { call, createStream, emit, tenantEnv, type ControlDelivery } from "./emulator-test-kit.js";
import { adminHeaders } from "../helpers/credentials.js";

/**
 * The address the tenant sends to (a load balancer in front of the service): a TCP relay
 * whose target the test switches, so the service can be replaced with no gap.
 */
async function startSwitchableAddress(initial: string) {
  let target = new URL(initial);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => client.destroy());
      socket.on("close", () => sockets.delete(socket));
    }
    upstream.on("close", () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    switchTo(url: string) {
      target = new URL(url);
    },
    close: () => new Promise<void>((ok) => (server.close(() => ok()), [...sockets].forEach((socket) => socket.destroy()))),
  };
}

async function previousUses(): Promise<number> {
  const text = await registry.metrics();
  return Number(/^streamkeeper_webhook_auth_previous_total (\d+)/m.exec(text)?.[1] ?? 0);
}

const oldPassword = "rotation-password-old";
const newPassword = "rotation-password-new";
const adminToken = "rotation-admin-token";

describe("rotating the webhook password", () => {
  let emulator: Emulator;
  let sink: SinkServer;
  let address: Awaited<ReturnType<typeof startSwitchableAddress>>;
  const running: TestService[] = [];

  beforeAll(async () => {
    // The tenant's real retry delays (1, 2, 4 s): a refused connection is retried, a 401 is not.
    emulator = await startEmulator();
    sink = await startSinkServer();
  });
  afterAll(async () => {
    for (const service of running) await service.close().catch(() => {});
    await address?.close();
    await sink?.close();
    await emulator?.close();
  });

  it("when the service is restarted with the new and previous password, the stream switched and the previous removed, at 20 events/s, then no request gets a 401 and every event is delivered", async () => {
    const start = async (env: Record<string, string>) => {
      const service = await startTestService({ DOWNSTREAM_URL: sink.url, ...tenantEnv(emulator), ADMIN_TOKEN: adminToken, STREAM_WATCH_INTERVAL_SECONDS: "0", RECONCILE_SWEEP_INTERVAL_SECONDS: "0", ...env });
      running.push(service);
      return service;
    };
    const stop = async (service: TestService) => {
      await service.close();
      running.splice(running.indexOf(service), 1);
    };
    const shared = { QUEUE_PREFIX: `test-rotation-${Date.now()}`, WEBHOOK_USERNAME: testCredentials.username };

    const before = await start({ ...shared, WEBHOOK_PASSWORD: oldPassword });
    address = await startSwitchableAddress(before.publicUrl!);
    const streamId = await createStream(emulator, `${address.url}/webhooks`, { auth: { method: "basic", username: testCredentials.username, password: oldPassword } });

    // 20 events a second, through the whole procedure.
    const emitted: string[] = [];
    let emitting = true;
    const emitter = (async () => {
      while (emitting) {
        const tick = Date.now();
        emitted.push(await emit(emulator, "user.created", { object: { user_id: `auth0|${emitted.length}` } }));
        await new Promise((ok) => setTimeout(ok, Math.max(0, 50 - (Date.now() - tick))));
      }
    })();
    const untilEmitted = async (count: number) => expect.poll(() => emitted.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(count);

    // 1. Restart with the new password and the old one as previous (rolling: the new process first).
    await untilEmitted(20);
    const rotating = await start({ ...shared, WEBHOOK_PASSWORD: newPassword, WEBHOOK_PREVIOUS_PASSWORD: oldPassword });
    address.switchTo(rotating.publicUrl!);
    await stop(before);
    // The tenant still sends the old password: the previous one lets it in, and is counted.
    const usesBefore = await previousUses();
    await expect.poll(previousUses, { timeout: 60_000 }).toBeGreaterThan(usesBefore);

    // 2. Switch the tenant's stream to the new credentials (what `streams connect` does).
    const connected = await fetch(`${rotating.adminUrl}/admin/streams/${streamId}/connect`, {
      method: "POST",
      headers: adminHeaders(adminToken, { "content-type": "application/json" }),
      body: JSON.stringify({ publicUrl: address.url }),
    });
    expect(connected.status).toBe(200);
    await untilEmitted(emitted.length + 20);
    // The uses of the previous password stop growing: the tenant sends the new one.
    const settledUses = await previousUses();
    await untilEmitted(emitted.length + 20);
    expect(await previousUses()).toBe(settledUses);

    // 3. Restart without the previous password.
    const after = await start({ ...shared, WEBHOOK_PASSWORD: newPassword });
    address.switchTo(after.publicUrl!);
    await stop(rotating);
    await untilEmitted(emitted.length + 20);
    emitting = false;
    await emitter;

    // Every event delivered to the downstream; no attempt anywhere answered 401.
    const deliveries = async () => ((await call(emulator, "GET", `/emulator/deliveries?stream_id=${streamId}`)).body as { deliveries: ControlDelivery[] }).deliveries;
    await expect.poll(async () => (await deliveries()).filter((delivery) => delivery.status !== "pending").length, { timeout: 120_000 }).toBe(emitted.length);
    const all = await deliveries();
    expect(all.flatMap((delivery) => delivery.attempts).filter((attempt) => attempt.error_message?.includes("401"))).toEqual([]);
    expect(all.filter((delivery) => delivery.status === "failed").map((delivery) => delivery.attempts)).toEqual([]);
    await expect.poll(() => new Set(sink.requests.map((request) => request.headers["webhook-id"])).size, { timeout: 120_000 }).toBe(emitted.length);
  }, 300_000);
});

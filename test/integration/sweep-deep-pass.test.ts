import { describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials } from "../helpers/start-test-service.js";
import { control, createStream, tenantEnv } from "./emulator-test-kit.js";
import { adminToken, sweepStatus, until } from "./sweep-test-kit.js";

/**
 * README.md#the-sweep-failed-deliveries-found-without-being-told: each sweep reads from its
 * checkpoint less RECONCILE_SWEEP_OVERLAP_SECONDS (600 s), and the tenant's list filters on
 * the event's time; a delivery the tenant fails an hour after its event is behind that for
 * good. The deep pass (every RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS, scaled to 3 s here) reads
 * the whole lookback again and finds it.
 */
describe("sweep: the deep pass", () => {
  const cleanup = useCleanup("each");

  it("when a delivery turns failed an hour after its event's time, after the sweep's checkpoint passed it, then the deep pass finds and recovers it", async () => {
    const emulator = await startEmulator({ timeScale: 0.01 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    // Nothing listens at the public URL: the stream's pushes are not what this test is about.
    const publicUrl = "http://127.0.0.1:9";
    const auth = { method: "basic" as const, username: testCredentials.username, password: testCredentials.password };
    const streamId = await createStream(emulator, `${publicUrl}/webhooks`, { auth, types: ["user.created"] });
    const logs = capturedLogger("info");
    const service = await startTestService(
      { ...tenantEnv(emulator), DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken, PUBLIC_URL: publicUrl, RECONCILE_SWEEP_INTERVAL_SECONDS: "1", RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS: "3", STREAM_WATCH_INTERVAL_SECONDS: "0" },
      "all",
      logs.logger,
    );
    cleanup.push(() => service.close());
    // The first sweep read the whole lookback, up to now.
    await until("the first sweep", async () => (await sweepStatus(service)).streams[0]?.lastRunAt != null);

    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const { id } = await control<{ id: string }>(emulator, "/deliveries", { stream_id: streamId, time: hourAgo });
    await until("the late failure recovered", async () => sink.requests.some((request) => request.headers["webhook-id"] === id), 60_000);
    expect(sink.requests.filter((request) => request.headers["webhook-id"] === id).map((request) => request.headers["x-streamkeeper-origin"])).toEqual(["reconcile"]);
    expect(logs.lines.some((line) => String(line.msg).startsWith("sweep: a deep pass reads the stream's whole lookback again"))).toBe(true);
  });
});

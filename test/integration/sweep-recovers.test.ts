import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { refusedUrl } from "../helpers/explicit-ports.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { createStream, emit, tenantEnv } from "./emulator-test-kit.js";
import { adminToken, byEventId, failedCount, sweepStatus, until } from "./sweep-test-kit.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { useCleanup } from "../helpers/cleanup.js";

/**
 * The sweep (README.md#the-sweep-failed-deliveries-found-without-being-told) against the
 * emulator and a real `streamkeeper start` process: the service is down while the tenant
 * gives up on 130 deliveries; once it runs, the sweep finds and recovers each, with no
 * command run, while live events keep arriving, and a stream pointing elsewhere is left alone.
 */
describe("sweep: failed deliveries recovered with no one asking", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the service was down while the tenant failed 130 deliveries, then after it starts each reaches the sink once with origin reconcile; live events once; a stream pointing elsewhere untouched; no 429 at the default share", async () => {
    // A tenant limiting to 20 API calls a second: at the default share the sweep spends 10.
    const emulator = await startEmulator({ timeScale: 0.001, rateLimit: 20 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const auth = { method: "basic" as const, username: testCredentials.username, password: testCredentials.password };
    const ours = await createStream(emulator, `${publicUrl}/webhooks`, { auth, types: ["user.created"] });
    // Another destination's stream (nothing listens there): its failures are not ours.
    const elsewhere = await createStream(emulator, `${refusedUrl}/hooks`, { auth, types: ["user.deleted"] });

    // The service is down: every delivery fails (connection refused, 4 attempts).
    const lost: string[] = [];
    for (let n = 0; n < 130; n++) lost.push(await emit(emulator, "user.created", { object: { user_id: `auth0|lost-${n}` } }));
    const theirs: string[] = [];
    for (let n = 0; n < 5; n++) theirs.push(await emit(emulator, "user.deleted", { object: { user_id: `auth0|theirs-${n}` } }));
    await until("130 failed deliveries on our stream", async () => (await failedCount(emulator, ours)) === 130);
    await until("5 failed deliveries on the other stream", async () => (await failedCount(emulator, elsewhere)) === 5);

    const service = await startServiceProcess(
      "all",
      {
        ...tenantEnv(emulator),
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: `test-${randomUUID()}`,
        WEBHOOK_USERNAME: testCredentials.username,
        WEBHOOK_PASSWORD: testCredentials.password,
        DOWNSTREAM_URL: sink.url,
        ADMIN_TOKEN: adminToken,
        PUBLIC_URL: publicUrl,
        RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
        DISPATCH_BACKOFF_BASE_MS: "20",
        LOG_LEVEL: "info",
      },
    );
    cleanup.push(() => service.stop());
    door.open(service.publicUrl!);

    // Live events while the sweep works: they arrive by webhook.
    const live: string[] = [];
    for (let n = 0; n < 20; n++) live.push(await emit(emulator, "user.created", { object: { user_id: `auth0|live-${n}` } }));

    await sink.until((requests) => byEventId(requests).size >= 150, 90_000);
    // Two more complete sweeps after everything arrived: a repeat would show by then.
    const runs = async () => (await sweepStatus(service)).streams[0]?.lastRunAt ?? "";
    const first = await runs();
    await until("a later sweep", async () => (await runs()) > first);
    const second = await runs();
    await until("another later sweep", async () => (await runs()) > second);

    const seen = byEventId(sink.requests);
    for (const id of lost) expect(seen.get(id), id).toEqual(["reconcile"]);
    for (const id of live) expect(seen.get(id), id).toEqual(["webhook"]);
    for (const id of theirs) expect(seen.has(id), id).toBe(false);
    expect(seen.size).toBe(150);

    const status = await sweepStatus(service);
    expect(status.streams).toEqual([expect.objectContaining({ streamId: ours, lastError: null, found: 130, recovered: 130, unrecovered: 0, checkpoint: expect.any(String) })]);
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toContain(`streamkeeper_sweep_failed_deliveries_total{stream="${ours}"} 130`);
    expect(metrics).toContain(`streamkeeper_tenant_unrecovered_deliveries{stream="${ours}"} 0`);
    expect(metrics).toMatch(new RegExp(`streamkeeper_sweep_runs_total\\{stream="${ours}",result="ok"\\} [1-9]`));
    expect(metrics).toMatch(new RegExp(`streamkeeper_sweep_lag_seconds\\{stream="${ours}"\\} \\d`));
    expect(metrics).not.toContain(elsewhere);
    expect(metrics).toMatch(/streamkeeper_mgmt_api_requests_total\{operation="list_deliveries",status="200"\} \d/);
    expect(metrics).not.toContain('status="429"');
  });

  it("when neither PUBLIC_URL nor RECONCILE_SWEEP_STREAMS is set, then there is no sweep, said once at start naming both settings", async () => {
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    const service = await startServiceProcess("worker", serviceProcessEnv({ ...tenantEnv(emulator), ADMIN_TOKEN: adminToken, RECONCILE_SWEEP_INTERVAL_SECONDS: "1", LOG_LEVEL: "info" }));
    cleanup.push(() => service.stop());
    // Logged after the sweep is set up (in order), so the sweep's line is there by then.
    await until("the start logged", async () => service.output().includes("admin surface (metrics, probes, admin API) listening"));
    const said = service.output().split("\n").filter((line) => line.includes("the sweep and the stream watch are off"));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain("PUBLIC_URL");
    expect(said[0]).toContain("RECONCILE_SWEEP_STREAMS");
    expect((await sweepStatus(service)).streams).toEqual([]);
  });
});

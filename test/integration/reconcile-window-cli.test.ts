import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { runCli } from "../chaos/run-cli.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { createStream, emit, tenantEnv } from "./emulator-test-kit.js";
import { adminToken, failedCount, until } from "./sweep-test-kit.js";
import { adminHeaders } from "../helpers/credentials.js";

/**
 * `streamkeeper reconcile --since` (README.md#the-sweep-failed-deliveries-found-without-being-told): one window read by the running
 * service through its admin API; `--dry-run` says what would happen and acts on nothing.
 */
describe("reconcile --since (one window, from the command line)", () => {
  let emulator: Emulator;
  let sink: SinkServer;
  let service: TestService;
  let streamId: string;
  let ids: string[];
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.001 });
    sink = await startSinkServer();
    // The sweep is off: only the command acts here.
    service = await startTestService({ ...tenantEnv(emulator), DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken, RECONCILE_SWEEP_INTERVAL_SECONDS: "0" });
    // A wrong password: our receiver answers 401 and the tenant fails each delivery at once, payload kept.
    streamId = await createStream(emulator, `${service.publicUrl}/webhooks`, { auth: { method: "basic", username: testCredentials.username, password: "wrong" }, types: ["user.created", "user.deleted"] });
    ids = [await emit(emulator, "user.created"), await emit(emulator, "user.created"), await emit(emulator, "user.deleted")];
    await until("3 failed deliveries", async () => (await failedCount(emulator, streamId)) === 3);
    const admin = new URL(service.adminUrl);
    cliEnv = { ADMIN_HOST: admin.hostname, ADMIN_PORT: admin.port, ADMIN_TOKEN: adminToken, LOG_LEVEL: "silent" };
    // The first id is recovered by id beforehand: the window finds it already here.
    const queued = await fetch(`${service.adminUrl}/admin/reconcile`, {
      method: "POST",
      headers: adminHeaders(adminToken, { "content-type": "application/json" }),
      body: JSON.stringify({ eventIds: [ids[0]], streamId }),
    });
    expect(queued.status).toBe(202);
    await sink.untilReceived(1, 30_000);
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await emulator?.close();
  });

  it("when --dry-run, then each failed delivery is printed would_recover or already_received and nothing is stored or sent", async () => {
    const run = await runCli(["reconcile", "--since", "1h", "--stream", streamId, "--dry-run"], cliEnv);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split("\n").sort()).toEqual([`${ids[0]} already_received`, `${ids[1]} would_recover`, `${ids[2]} would_recover`].sort());
    const json = await runCli(["reconcile", "--since", new Date(Date.now() - 3_600_000).toISOString(), "--stream", streamId, "--type", "user.deleted", "--dry-run", "--json"], cliEnv);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ eventId: ids[2], streamId, outcome: "would_recover" });
    const known = await fetch(`${service.adminUrl}/admin/events/${ids[1]}`, { headers: adminHeaders(adminToken) });
    expect(known.status).toBe(404);
    expect(sink.requests).toHaveLength(1);
  });

  it("when --type is a pattern, then the failed deliveries whose type matches it are listed (the pattern is ours: the tenant is asked for every type)", async () => {
    const run = await runCli(["reconcile", "--since", "1h", "--stream", streamId, "--type", "user.*", "--dry-run"], cliEnv);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split("\n").sort()).toEqual([`${ids[0]} already_received`, `${ids[1]} would_recover`, `${ids[2]} would_recover`].sort());
  });

  it("when run for real, then the window's missing events are recovered and reach the sink once", async () => {
    const run = await runCli(["reconcile", "--since", "1h", "--stream", streamId], cliEnv);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split("\n").sort()).toEqual([`${ids[0]} already_received`, `${ids[1]} recovered`, `${ids[2]} recovered`].sort());
    await sink.untilReceived(3, 30_000);
    expect(sink.requests.map((request) => request.headers["webhook-id"]).sort()).toEqual([...ids].sort());
  });

  it("when --since is not a duration or a time, then exit 2 naming the accepted forms", async () => {
    const run = await runCli(["reconcile", "--since", "yesterday", "--dry-run"], cliEnv);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: --since "yesterday": give a duration back from now \(90m, 6h, 7d\), a date \(2026-11-25: its midnight UTC\) or a time in ISO 8601/);
    const ids = await runCli(["reconcile", "evt_7PhFNYbTW8At5NiLxgUn4D", "--since", "1h"], cliEnv);
    expect(ids.code).toBe(2);
  });

  it("when --stream is not a stream id, then exit 2 with the same words as without --since", async () => {
    for (const stream of ["est_short", "x".repeat(26)]) {
      const run = await runCli(["reconcile", "--since", "1h", "--stream", stream], cliEnv);
      expect(run).toMatchObject({ code: 2, stderr: `error: --stream must be a stream id such as est_aD5AUDqZbHFcMoEx2LxAk9 (est_ and 22 letters or digits, 26 characters), got ${JSON.stringify(stream)}\n` });
    }
  });

  it("when --since reaches further back than DEDUPE_TTL_SECONDS, then exit 2 naming it and nothing is sent; a dry run may look that far", async () => {
    const before = sink.requests.length;
    const run = await runCli(["reconcile", "--since", "8d", "--stream", streamId], cliEnv);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain("is further back than DEDUPE_TTL_SECONDS (604800 s");
    const dry = await runCli(["reconcile", "--since", "8d", "--stream", streamId, "--dry-run"], cliEnv);
    expect(dry.code, dry.stderr).toBe(0);
    expect(sink.requests).toHaveLength(before);
  });

  it("when no service answers, then exit 1 saying where it looked and what to start", async () => {
    const run = await runCli(["reconcile", "--since", "1h", "--stream", streamId], { ...cliEnv, ADMIN_PORT: "1" });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no running service answers at http://127.0.0.1:1");
  });
});

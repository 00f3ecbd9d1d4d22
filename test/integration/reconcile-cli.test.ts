import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { tenantId } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { call, createStream, emit, settled, tenantEnv } from "./emulator-test-kit.js";
import { builtCli } from "../helpers/start-service-process.js";
import { until } from "../helpers/until.js";

/**
 * `streamkeeper reconcile` end to end: the emulator pushes to the real service, which
 * refuses it (the stream has a wrong password), so the tenant marks the delivery failed;
 * the built CLI then recovers it from the delivery history and the sink receives it.
 */
// The command under test is the built one: this run's build (global-setup.ts).
const main = builtCli();
const redisUrl = inject("redisUrl");
const adminToken = "reconcile-cli-admin-token";

let emulator: Emulator;
let sink: SinkServer;
let service: TestService;
let streamId: string;
let dataDir: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built command; `watch` sees its stderr so far as it comes. */
function cli(args: string[], env: Record<string, string> = {}, stdin = "", watch?: (stderr: string) => void): Promise<Run> {
  const child = spawn(process.execPath, [main, ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      // The command reaches only the running service (its admin API); its own Redis setting is a closed port.
      REDIS_URL: "redis://127.0.0.1:9",
      ADMIN_URL: service.adminUrl,
      ADMIN_TOKEN: adminToken,
      DATA_DIR: dataDir,
      MGMT_API_BASE_URL: emulator.apiBaseUrl,
      MGMT_TOKEN_URL: emulator.tokenUrl,
      MGMT_CLIENT_ID: "emulator-client",
      MGMT_CLIENT_SECRET: "emulator-secret",
      LOG_LEVEL: "warn",
      ...env,
    },
  });
  child.stdin.end(stdin);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    watch?.(stderr);
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr })));
}

/** An event the tenant gave up on: our receiver answered 401, a 4xx fails the delivery at once (docs/tenant.md#webhook-delivery). */
async function failedEvent(): Promise<string> {
  const id = await emit(emulator, "user.created", { object: { user_id: `auth0|${randomUUID()}`, email: "jane@example.com" } });
  const delivery = await settled(emulator, id);
  expect(delivery.status).toBe("failed");
  expect(delivery.attempts[0]?.error_message).toContain("401");
  return id;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "sk-reconcile-cli-"));
  emulator = await startEmulator({ timeScale: 0.01 });
  sink = await startSinkServer();
  service = await startTestService({
    DOWNSTREAM_URL: sink.url,
    ...tenantEnv(emulator),
    RECONCILE_RATE_PER_SECOND: "20",
    ADMIN_TOKEN: adminToken,
  });
  streamId = await createStream(emulator, `${service.publicUrl}/webhooks`, {
    auth: { method: "basic", username: testCredentials.username, password: "not-the-password" },
    types: ["user.created"],
  });
  // The build above takes a while on a loaded machine.
}, 180_000);

afterAll(async () => {
  await service?.close();
  await sink?.close();
  await emulator?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("streamkeeper reconcile", () => {
  it("when the tenant gave up on an event, then reconcile recovers it once and a second run reports already_received", async () => {
    const id = await failedEvent();
    expect(sink.requests).toHaveLength(0);

    const first = await cli(["reconcile", id]);
    expect(first).toMatchObject({ code: 0, stdout: `${id} recovered\n` });
    const [delivered] = await sink.untilReceived(1);
    expect(delivered!.headers["x-streamkeeper-origin"]).toBe("reconcile");
    expect(delivered!.headers["webhook-id"]).toBe(id);
    // Replayed as the tenant stored it: its source is just urn:auth0: (docs/tenant.md#delivery-history-of-one-event).
    expect(JSON.parse(delivered!.body)).toMatchObject({ id, type: "user.created", source: "urn:auth0:", a0stream: streamId, data: { object: { email: "jane@example.com" } } });

    const again = await cli(["reconcile", id, "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ eventId: id, streamId: null, outcome: "already_received" });
    // Known ids cost no tenant call and no store, so nothing was queued to deliver again.
    const deliveries = new Queue(deliveryQueueName("default"), { connection: createRedis(redisUrl, "worker"), prefix: deliveryQueueBullPrefix(service.config.env.QUEUE_PREFIX, "default") });
    expect(await deliveries.getJobCountByTypes("waiting", "prioritized", "active", "delayed")).toBe(0);
    await deliveries.close();
    expect(sink.requests).toHaveLength(1);
  });

  it("when the tenant's API is down while the command waits, then it says how many ids wait and on what, and once the tenant is back every id is recovered with no one acting", async () => {
    const ids = [await failedEvent(), await failedEvent()];
    const setDown = (status: number | null) => call(emulator, "PUT", "/emulator/api", { body: { down_status: status } });
    expect((await setDown(503)).status).toBe(200);
    let stderr = "";
    const run = cli(["reconcile", ...ids, "--stream", streamId], {}, "", (text) => (stderr = text));
    try {
      await until("the command says the ids wait", () => stderr.includes("wait on a failing call"), { detail: () => stderr });
    } finally {
      await setDown(null);
    }
    const done = await run;
    expect(done.code).toBe(0);
    expect(done.stdout.split("\n").filter(Boolean).sort()).toEqual(ids.map((id) => `${id} recovered`).sort());
    expect(done.stderr).toMatch(/^note: [12] of the ids wait on a failing call \(.*503.*; \d+ attempts so far\); the service retries them with backoff for up to RECONCILE_RETRY_FOR_SECONDS, nothing to do but wait$/m);
  });

  it("when a stream was created after the service last listed the streams, then reconcile <id> naming no stream finds the event there, not not_found", async () => {
    // The service lists the streams for an id naming none, and keeps that list a minute.
    expect((await cli(["reconcile", tenantId("evt")])).stdout).toMatch(/ not_found\n$/);
    const newStream = await createStream(emulator, `${service.publicUrl}/webhooks`, {
      auth: { method: "basic", username: testCredentials.username, password: "not-the-password" },
      types: ["user.deleted"],
    });
    const id = await emit(emulator, "user.deleted", { object: { user_id: `auth0|${randomUUID()}` } });
    expect((await settled(emulator, id)).status).toBe("failed");
    const run = await cli(["reconcile", id, "--json"]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ eventId: id, streamId: newStream, outcome: "recovered" });
  });

  it("when an id is unknown to the tenant, then it prints not_found and exits 1, other ids still reported", async () => {
    const known = await failedEvent();
    const unknown = tenantId("evt");
    const run = await cli(["reconcile", "--file", "-", "--stream", streamId], {}, `# ids\n${unknown}\n\n${known}\n`);
    expect(run.code).toBe(1);
    expect(run.stdout.split("\n").filter(Boolean).sort()).toEqual([`${known} recovered`, `${unknown} not_found`].sort());
  });

  it("when the service's client lacks read:event_deliveries, then the outcome names the scope and the command exits 1", async () => {
    await call(emulator, "POST", "/emulator/clients", {
      body: { client_id: "no-deliveries", client_secret: "no-deliveries-secret", scopes: ["read:event_streams"], global: true },
    });
    const id = await failedEvent();
    const scoped = await startTestService({ DOWNSTREAM_URL: sink.url, ...tenantEnv(emulator), MGMT_CLIENT_ID: "no-deliveries", MGMT_CLIENT_SECRET: "no-deliveries-secret", ADMIN_TOKEN: adminToken });
    try {
      const run = await cli(["reconcile", id, "--stream", streamId], { ADMIN_URL: scoped.adminUrl });
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(new RegExp(`^${id} error: get_delivery: insufficient scope: the client needs read:event_deliveries; grant it to the application in the tenant`));
      expect(run.stdout + run.stderr).not.toContain("no-deliveries-secret");
    } finally {
      await scoped.close();
    }
  });

  it("when jobs are queued with --no-wait and no worker runs, then the command says they wait, and a worker started later works them", async () => {
    const id = await failedEvent();
    const prefix = `test-${randomUUID()}`;
    const receiver = await startTestService({ QUEUE_PREFIX: prefix, DOWNSTREAM_URL: sink.url, ...tenantEnv(emulator), ADMIN_TOKEN: adminToken }, "receiver");
    try {
      const queued = await cli(["reconcile", id, "--no-wait"], { ADMIN_URL: receiver.adminUrl });
      expect(queued.code).toBe(0);
      expect(queued.stdout).toMatch(new RegExp(`^${id} queued \\S+\\n$`));
      expect(queued.stderr).toContain("no worker consumes the reconcile queue of the service");

      const worker = await startTestService({ QUEUE_PREFIX: prefix, DOWNSTREAM_URL: sink.url, ...tenantEnv(emulator), ADMIN_TOKEN: adminToken }, "worker");
      try {
        const run = await cli(["reconcile", id, "--stream", streamId], { ADMIN_URL: receiver.adminUrl });
        expect(run.code).toBe(0);
        // The --no-wait job and this one race for the id: one recovers it, the other finds it received.
        expect([`${id} recovered\n`, `${id} already_received\n`]).toContain(run.stdout);
      } finally {
        await worker.close();
      }
    } finally {
      await receiver.close();
    }
  });

  it("when no id is given or the file cannot be read, then exit 2 with one error line saying what to change", async () => {
    const none = await cli(["reconcile"]);
    expect(none).toMatchObject({ code: 2, stdout: "", stderr: "error: give at least one event id, as arguments or with --file <path> (one id per line), or a window with --since <when> (e.g. --since 1h)\n" });
    const missing = await cli(["reconcile", "--file", join(dataDir, "nope.txt")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: --file .*nope\.txt: cannot read it \(ENOENT\); check the path\n$/);
    const file = join(dataDir, "two-per-line.txt");
    await writeFile(file, "evt_a evt_b\n");
    const bad = await cli(["reconcile", "--file", file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("line 1: \"evt_a evt_b\" is not one event id; put one id per line");
    const stream = await cli(["reconcile", tenantId("evt"), "--stream", "est_short"]);
    expect(stream).toMatchObject({ code: 2, stderr: 'error: --stream must be a stream id such as est_aD5AUDqZbHFcMoEx2LxAk9 (est_ and 22 letters or digits, 26 characters), got "est_short"\n' });
    // 26 characters are not enough: the same rule as with --since.
    const long = await cli(["reconcile", tenantId("evt"), "--stream", "x".repeat(26)]);
    expect(long).toMatchObject({ code: 2, stderr: `error: --stream must be a stream id such as est_aD5AUDqZbHFcMoEx2LxAk9 (est_ and 22 letters or digits, 26 characters), got "${"x".repeat(26)}"\n` });
  });
});

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { runCli } from "../chaos/run-cli.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { control, createStream, emit, settled, startSink, tenantEnv, type Sink } from "./emulator-test-kit.js";
import { adminHeaders } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";
import { refusedUrl } from "../helpers/explicit-ports.js";

interface StoredStream {
  destination: { configuration: { webhook_endpoint: string; webhook_authorization: Record<string, string> } };
}

const adminToken = "connect-admin-token";
let emu: Emulator;
let sink: Sink;
let service: ServiceProcess;
let dataDir: string;
let shellDir: string;

beforeAll(async () => {
  emu = await startEmulator({ timeScale: 0.01 });
  sink = await startSink(() => 200);
  dataDir = await mkdtemp(join(tmpdir(), "sk-connect-"));
  shellDir = await mkdtemp(join(tmpdir(), "sk-connect-shell-"));
  // Credentials A: only the service has them.
  service = await startServiceProcess(
    "all",
    serviceProcessEnv({ ...tenantEnv(emu), DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, WEBHOOK_USERNAME: "service-a", WEBHOOK_PASSWORD: "password-of-service-a", DOWNSTREAM_URL: sink.url }),
  );
});

afterAll(async () => {
  await service?.stop();
  await sink?.close();
  await emu?.close();
  for (const dir of [dataDir, shellDir]) if (dir) await rm(dir, { recursive: true, force: true });
});

describe("streamkeeper streams connect", () => {
  it("when a service runs with credentials A and the shell has no WEBHOOK_*, then the stream gets A through the service and the next event is delivered", async () => {
    const id = await createStream(emu, "https://elsewhere.example.com/hook", { auth: { method: "bearer", token: "old-token" } });
    const run = await runCli(["streams", "connect", id, "--public-url", service.publicUrl!], { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, DATA_DIR: shellDir });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`stream ${id} now delivers to ${service.publicUrl}/webhooks/${id} with basic authorization (user service-a)\n`);
    const stored = await control<StoredStream>(emu, `/streams/${id}`);
    expect(stored.destination.configuration).toEqual({
      webhook_endpoint: `${service.publicUrl}/webhooks/${id}`,
      webhook_authorization: { method: "basic", username: "service-a", password: "password-of-service-a" },
    });

    const eventId = await emit(emu);
    expect((await settled(emu, eventId, 30_000)).status).toBe("succeeded");
    await until(`event ${eventId} reaches the downstream`, () => sink.requests.some((request) => request.headers["webhook-id"] === eventId), { everyMs: 50 });
  });

  it("when neither a service runs nor the shell has webhook credentials, then exit 2 naming what to set, and nothing changes", async () => {
    const id = await createStream(emu, "https://elsewhere.example.com/hook");
    const adminUrl = refusedUrl;
    const run = await runCli(["streams", "connect", id, "--public-url", "https://sk.example.com"], { ...tenantEnv(emu), ADMIN_URL: adminUrl, DATA_DIR: shellDir });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `error: no service answers at ${adminUrl} (set ADMIN_URL to where it runs), and this shell has no webhook credentials: start the service, or set WEBHOOK_USERNAME and WEBHOOK_PASSWORD (or WEBHOOK_AUTH with its WEBHOOK_* settings) to the ones the service checks\n`,
    );
    expect((await control<StoredStream>(emu, `/streams/${id}`)).destination.configuration.webhook_endpoint).toBe("https://elsewhere.example.com/hook");
  });
});

describe("POST /admin/streams/:streamId/connect", () => {
  let bare: TestService;
  let withPublicUrl: TestService;
  beforeAll(async () => {
    bare = await startTestService({ ADMIN_TOKEN: adminToken });
    withPublicUrl = await startTestService({ ADMIN_TOKEN: adminToken, PUBLIC_URL: "https://sk.example.com/", ...tenantEnv(emu) });
  });
  afterAll(async () => {
    await bare?.close();
    await withPublicUrl?.close();
  });

  it("when the command gives no --public-url, then the service's PUBLIC_URL is used", async () => {
    const id = await createStream(emu, "https://elsewhere.example.com/hook");
    const run = await runCli(["streams", "connect", id], { ADMIN_URL: withPublicUrl.adminUrl, ADMIN_TOKEN: adminToken, DATA_DIR: shellDir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`stream ${id} now delivers to https://sk.example.com/webhooks/${id} with basic authorization (user tenant)\n`);
  });

  it("when neither the command nor the service knows a public URL, then exit 2 saying to give one", async () => {
    const run = await runCli(["streams", "connect", "est_aD5AUDqZbHFcMoEx2LxAk9"], { ADMIN_URL: bare.adminUrl, ADMIN_TOKEN: adminToken, DATA_DIR: shellDir });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: the service at ${bare.adminUrl} knows no public URL: give --public-url, or set PUBLIC_URL for the service\n`);
  });

  it("when the shell's ADMIN_TOKEN is not the service's, then exit 2 saying to set it", async () => {
    const run = await runCli(["streams", "connect", "est_aD5AUDqZbHFcMoEx2LxAk9"], { ADMIN_URL: bare.adminUrl, ADMIN_TOKEN: "wrong-token", DATA_DIR: shellDir });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^error: the service at ${bare.adminUrl} refused this shell's ADMIN_TOKEN: set ADMIN_TOKEN to the service's admin token`));
    expect(run.stderr).not.toContain("wrong-token");
  });

  const connect = (adminUrl: string, streamId: string, body: unknown) =>
    fetch(`${adminUrl}/admin/streams/${streamId}/connect`, { method: "POST", headers: adminHeaders(adminToken, { "content-type": "application/json" }), body: JSON.stringify(body) });

  it("when a worker has the receivers' explicit credentials, then it connects with them; with generated ones, 409 saying where to ask", async () => {
    const worker = await startTestService({ ADMIN_TOKEN: adminToken, ...tenantEnv(emu) }, "worker");
    const generated = await startTestService({ ADMIN_TOKEN: adminToken, ...tenantEnv(emu), WEBHOOK_USERNAME: "", WEBHOOK_PASSWORD: "" }, "worker");
    try {
      const id = await createStream(emu, "https://elsewhere.example.com/hook");
      const answer = await connect(worker.adminUrl, id, { publicUrl: "https://sk.example.com" });
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as StoredStream).destination.configuration).toMatchObject({ webhook_endpoint: `https://sk.example.com/webhooks/${id}` });
      expect((await control<StoredStream>(emu, `/streams/${id}`)).destination.configuration.webhook_authorization).toEqual({ method: "basic", username: "tenant", password: "s3cret-webhook-password" });

      const refused = await connect(generated.adminUrl, id, { publicUrl: "https://sk.example.com" });
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { detail: string }).detail).toBe(
        "this process runs --role worker, and the receivers' credentials are generated in their DATA_DIR: ask a receiver's admin API (ADMIN_URL), or set WEBHOOK_USERNAME and WEBHOOK_PASSWORD for every role",
      );
    } finally {
      await worker.close();
      await generated.close();
    }
  });

  it("when the service has no tenant settings, then 409 problem+json naming them", async () => {
    const answer = await connect(bare.adminUrl, "est_aD5AUDqZbHFcMoEx2LxAk9", { publicUrl: "https://sk.example.com" });
    expect(answer.status).toBe(409);
    expect(answer.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(((await answer.json()) as { detail: string }).detail).toBe(
      "the service has no tenant settings: set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET for the service and restart it",
    );
  });

  it("when no publicUrl is sent and the service has no PUBLIC_URL, then 400 saying to send one or set it", async () => {
    const answer = await connect(bare.adminUrl, "est_aD5AUDqZbHFcMoEx2LxAk9", {});
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { detail: string }).detail).toBe('no public URL is known: send {"publicUrl":"https://..."} or set the service\'s PUBLIC_URL');
  });

  it("when the stream does not exist at the tenant, then 404 with the tenant's message", async () => {
    const answer = await connect(service.adminUrl, "est_aD5AUDqZbHFcMoEx2LxAk9", { publicUrl: "https://sk.example.com" });
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { detail: string }).detail).toContain("The requested stream does not exist.");
  });
});

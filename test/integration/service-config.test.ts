import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readServiceConfig } from "../../src/cli/read-service-config.js";
import { loadConfig } from "../../src/config.js";
import { runCli } from "../chaos/run-cli.js";
import { startServiceProcess, type ServiceProcess } from "../chaos/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { startSink, type Sink } from "./emulator-test-kit.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";

const adminToken = "config-admin-token";
const version = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
const prefix = `svc-config-${randomUUID()}`;
let sink: Sink;
let service: ServiceProcess;
let dir: string;
let shellEnv: Record<string, string>;

/**
 * A service process without tenant settings and one route whose downstream refuses every
 * event (400: a dead letter at once), and commands run from a shell whose settings differ.
 */
beforeAll(async () => {
  sink = await startSink(() => 400);
  dir = await mkdtemp(join(tmpdir(), "sk-svc-config-"));
  const downstream = sink.url.replace("http://", "http://user:route-password@");
  service = await startServiceProcess("all", serviceProcessEnv({ QUEUE_PREFIX: prefix, DATA_DIR: dir, ADMIN_TOKEN: adminToken, DOWNSTREAM_URL: downstream, LOG_LEVEL: "info" }));
  const routesFile = join(dir, "shell-routes.json");
  await writeFile(routesFile, JSON.stringify([{ name: "shell-only", match: "*", url: "http://127.0.0.1:9/elsewhere" }]));
  shellEnv = { REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: prefix, DATA_DIR: dir, ROUTES_FILE: routesFile, ADMIN_URL: "http://127.0.0.1:9" };
});

afterAll(async () => {
  await service?.stop();
  await sink?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the service's published configuration", () => {
  it("when the service runs, then GET /admin/config and Redis hold its routes without credentials, its version and what is configured", async () => {
    const answer = await fetch(`${service.adminUrl}/admin/config`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(answer.status).toBe(200);
    const published = await answer.json();
    expect(published).toMatchObject({
      version,
      role: "all",
      queuePrefix: prefix,
      routes: [{ name: "default", match: ["*"], url: new URL(sink.url).origin }],
      tenantConfigured: false,
      publicUrl: null,
      sweep: { configured: false, streamIds: null, publicUrl: null },
    });
    expect(JSON.stringify(published)).not.toContain("route-password");

    const fromRedis = await readServiceConfig(loadConfig({ REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: prefix }));
    expect(fromRedis).toEqual({ config: published, from: "Redis" });
    const fromAdmin = await readServiceConfig(loadConfig({ ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, DATA_DIR: dir }));
    expect(fromAdmin).toEqual({ config: published, from: `${service.adminUrl}/admin/config` });
    const none = await readServiceConfig(loadConfig({ REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: `${prefix}-other` }));
    expect(none).toEqual({ config: undefined, why: `no service has published its configuration under QUEUE_PREFIX=${prefix}-other (start it, or set REDIS_URL and QUEUE_PREFIX as the service has them)` });
  });

  it("when the service starts without tenant settings, then it says once that reconcile, the sweep and the stream watch are off", () => {
    const lines = service.output().split("\n").filter((line) => line.includes("reconcile, the sweep and the stream watch are off"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, msg: "reconcile, the sweep and the stream watch are off: set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET" });
  });

  it("when dead-letters runs in a shell with other routes, then it lists the service's route's dead letters and says in one line that the shell differs", async () => {
    const post = await fetch(`${service.publicUrl}/webhooks`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${testCredentials.username}:${testCredentials.password}`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify(userEvent({ id: "evt_deadletterconfig000000", a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" })),
    });
    expect(post.status).toBe(202);
    let run;
    const deadline = Date.now() + 60_000;
    for (;;) {
      run = await runCli(["dead-letters", "list", "--json"], shellEnv);
      if (run.code !== 0 || run.stdout.includes("evt_deadletterconfig000000") || Date.now() > deadline) break;
    }
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { route: string; eventId: string }[]).map(({ route, eventId }) => ({ route, eventId }))).toEqual([{ route: "default", eventId: "evt_deadletterconfig000000" }]);
    expect(run.stderr).toBe(`note: this shell's ROUTES_FILE/DOWNSTREAM_URL differ from the service's routes; using the service's: default (* -> ${new URL(sink.url).origin})\n`);
  });

  it("when the service cannot reconcile, then reconcile from a shell with tenant settings exits 2 naming the service, and a job's outcome names it too, in the service's log as well", async () => {
    const tenant = { MGMT_API_BASE_URL: "http://127.0.0.1:9/api/v2", MGMT_TOKEN_URL: "http://127.0.0.1:9/oauth/token", MGMT_CLIENT_ID: "id", MGMT_CLIENT_SECRET: "secret" };
    const pid = service.child.pid;
    const label = `the service (role all, pid ${pid} on ${hostname()})`;
    const run = await runCli(["reconcile", "evt_unreconcilable00000000"], { ...shellEnv, ...tenant });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: ${label} runs the reconcile worker but has no tenant settings: set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET for the service and restart it\n`);

    const headers = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
    const queued = await fetch(`${service.adminUrl}/admin/reconcile`, { method: "POST", headers, body: JSON.stringify({ eventIds: ["evt_unreconcilable00000000"] }) });
    const { jobs } = (await queued.json()) as { jobs: { jobId: string }[] };
    const outcome = `error: ${label} cannot reconcile: it has no tenant settings; set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET for it and restart it`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const job = (await (await fetch(`${service.adminUrl}/admin/reconcile/${jobs[0]!.jobId}`, { headers })).json()) as { outcome: string | null };
      if (job.outcome !== null) {
        expect(job.outcome).toBe(outcome);
        break;
      }
      if (Date.now() > deadline) throw new Error("the reconcile job never finished");
      await new Promise((ok) => setTimeout(ok, 50));
    }
    // The job's outcome can be read before the process has written its log line: wait for it.
    const logged = () => service.output().split("\n").filter((line) => line.includes("evt_unreconcilable00000000") && line.includes("could not recover"));
    for (const logDeadline = Date.now() + 30_000; logged().length === 0 && Date.now() < logDeadline; ) await new Promise((ok) => setTimeout(ok, 50));
    expect(logged().map((line) => (JSON.parse(line) as { outcome: string }).outcome)).toEqual([outcome]);
  });
});

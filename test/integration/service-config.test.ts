import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis } from "../../src/redis/redis-connection.js";
import { runCli } from "../chaos/run-cli.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSink, type Sink } from "./emulator-test-kit.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { adminHeaders, webhookAuthorization } from "../helpers/credentials.js";
import { refusedUrl } from "../helpers/explicit-ports.js";

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
  // The command's shell: other routes, and a Redis that does not answer (a closed port):
  // commands reach only the service, through its admin API.
  shellEnv = { REDIS_URL: "redis://127.0.0.1:9", QUEUE_PREFIX: prefix, DATA_DIR: dir, ROUTES_FILE: routesFile, ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken };
});

afterAll(async () => {
  await service?.stop();
  await sink?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the service's published configuration", () => {
  it("when the service runs, then GET /admin/config holds its routes without credentials, its version and what is configured, and Redis holds no copy of it", async () => {
    const answer = await fetch(`${service.adminUrl}/admin/config`, { headers: adminHeaders(adminToken) });
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
    const redis = createRedis(inject("redisUrl"), "worker");
    try {
      expect(await redis.keys(`{${prefix}}:service-config`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it("when the service starts without tenant settings, then it says once that reconcile, the sweep and the stream watch are off", () => {
    const lines = service.output().split("\n").filter((line) => line.includes("reconcile, the sweep and the stream watch are off"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, msg: "reconcile, the sweep and the stream watch are off: set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET" });
  });

  it("when a second start fails on the same PORT, then it exits 2 and the commands still list and replay the running service's dead letters, with the shell's Redis unreachable", async () => {
    const post = await fetch(`${service.publicUrl}/webhooks`, {
      method: "POST",
      headers: { authorization: webhookAuthorization, "content-type": "application/json" },
      body: JSON.stringify(userEvent({ id: "evt_deadletterconfig000000", a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" })),
    });
    expect(post.status).toBe(202);
    const port = new URL(service.publicUrl!).port;
    const second = await runCli(["start"], { ...shellEnv, REDIS_URL: inject("redisUrl"), PORT: port, HOST: "127.0.0.1", ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1", WEBHOOK_USERNAME: "other", WEBHOOK_PASSWORD: "other-password" });
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`PORT ${port} is already in use`);

    let run;
    const deadline = Date.now() + 60_000;
    for (;;) {
      run = await runCli(["dead-letters", "list", "--json"], shellEnv);
      if (run.code !== 0 || run.stdout.includes("evt_deadletterconfig000000") || Date.now() > deadline) break;
    }
    expect([run.code, run.stderr]).toEqual([0, ""]);
    const letters = JSON.parse(run.stdout) as { route: string; eventId: string; jobId: string; type: string; failedReason: string; failedAt: string; attempts: number }[];
    expect(letters.map(({ route, eventId, type, attempts }) => ({ route, eventId, type, attempts }))).toEqual([{ route: "default", eventId: "evt_deadletterconfig000000", type: "user.updated", attempts: 1 }]);
    expect(letters[0]!.failedReason).toContain("400");

    const table = await runCli(["dead-letters", "list"], shellEnv);
    expect(table.stdout).toMatch(/^ROUTE\s+JOB ID/);
    expect(table.stdout).toContain("evt_deadletterconfig000000");

    const replay = await runCli(["dead-letters", "replay", "--all"], shellEnv);
    expect([replay.code, replay.stdout, replay.stderr]).toEqual([0, `replayed default/${letters[0]!.jobId}\n`, ""]);
    // The downstream still refuses it: a dead letter again, after a second delivery attempt.
    await expect.poll(() => sink.requests.length).toBeGreaterThanOrEqual(2);
  });

  it("when no service answers at ADMIN_URL, then dead-letters and reconcile say so in one line and exit 1", async () => {
    const gone = { ...shellEnv, ADMIN_URL: refusedUrl };
    for (const args of [["dead-letters", "list"], ["dead-letters", "replay", "--all"], ["reconcile", "evt_nobodyhome000000000000"]]) {
      const run = await runCli(args, gone);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(new RegExp(`^error: no service answers at ${gone.ADMIN_URL} \\(ECONNREFUSED\\): start it with \`streamkeeper start\`, or set ADMIN_URL to where it runs\n$`));
      expect(run.stdout).toBe("");
    }
  });

  it("when the shell's ADMIN_TOKEN is not the service's, then dead-letters exits 2 saying to set it", async () => {
    const run = await runCli(["dead-letters", "list"], { ...shellEnv, ADMIN_TOKEN: "not-the-token" });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: the service at .* refused this shell's ADMIN_TOKEN: set ADMIN_TOKEN to the service's admin token/);
  });

  it("when the service cannot reconcile, then reconcile from a shell with tenant settings exits 2 naming the service, and a job's outcome names it too, in the service's log as well", async () => {
    const tenant = { MGMT_API_BASE_URL: "http://127.0.0.1:9/api/v2", MGMT_TOKEN_URL: "http://127.0.0.1:9/oauth/token", MGMT_CLIENT_ID: "id", MGMT_CLIENT_SECRET: "secret" };
    const pid = service.child.pid;
    const label = `the service (role all, pid ${pid} on ${hostname()})`;
    const run = await runCli(["reconcile", "evt_unreconcilable00000000"], { ...shellEnv, ...tenant });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: ${label} runs the reconcile worker but has no tenant settings: set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET for the service and restart it\n`);

    const headers = adminHeaders(adminToken, { "content-type": "application/json" });
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

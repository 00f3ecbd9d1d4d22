import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { runCli } from "../chaos/run-cli.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { createStream, emit, settled } from "./emulator-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";

/** Distinctive values, so a leak anywhere is found by a plain search. */
const secret = {
  webhookPassword: "whp-Secr3t-7Qx9wV",
  routeSigningKey: "route-signing-key-Zr8",
  routeToken: "rt-T0ken-5Kp2mN",
  routeApiKey: "rk-ApiKey-8Zm4qL",
  routeUrlPassword: "ru-Passw0rd-2Fc7",
  // A Slack-style hook URL: the secret is the path.
  routeUrlPath: "T0PATH-S3cret-6Jd3",
  clientSecret: "mcs-Client-Secr3t-3Vb6",
  wrongClientSecret: "mcs-Wrong-Secr3t-1Tg5",
  adminToken: "adm-T0ken-9Wd1xR",
  redisPassword: "rds-Passw0rd-4Hy8",
};
const webhookUser = "tenant-user";
const routeSecret = `whsec_${Buffer.from(secret.routeSigningKey).toString("base64")}`;
const b64 = (text: string) => Buffer.from(text).toString("base64");
/** Every form in which a secret could show: itself, and the base64 of the Basic credentials it is part of. */
const forms: Record<string, string> = {
  ...secret,
  routeSecret,
  webhookBasic: b64(`${webhookUser}:${secret.webhookPassword}`),
  adminBasic: b64(`anyone:${secret.adminToken}`),
  routeUrlBasic: b64(`hookuser:${secret.routeUrlPassword}`),
};
const jwt = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+/;

/**
 * A full run with known secrets (webhook Basic credentials, a route's signing secret,
 * headers and URL credentials, the management client secret, the admin token, the Redis
 * password), through every path that logs or answers: deliveries failing and retried
 * (downstreams that echo the request's credentials back), a dead letter, a refused
 * webhook, a reconcile, tenant commands with right and wrong credentials, the admin API
 * and dashboard, and a Redis outage. Everything captured (debug logs of the service
 * process, each CLI's stdout and stderr, every answer body, /metrics) must hold none
 * of the secrets, in any form, and no access token.
 */
describe("secrets: never in logs, answers, CLI output or metrics", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when a full flow with faults runs at LOG_LEVEL=debug, then no secret appears in anything the service or its CLI wrote or answered", async () => {
    const captured: Array<{ where: string; text: string }> = [];
    const keep = (where: string, text: string) => captured.push({ where, text });
    const keepAnswer = async (where: string, answer: Response) => {
      const text = await answer.text();
      keep(`${where} → ${answer.status}`, `${JSON.stringify([...answer.headers])}\n${text}`);
      return { status: answer.status, text };
    };

    const dir = await mkdtemp(join(tmpdir(), "sk-secrets-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const redisOptions = { dir: join(dir, "redis"), appendOnly: true, extraArgs: ["--requirepass", secret.redisPassword] };
    let redis: RedisServer = await startRedisServer(redisOptions);
    cleanup.push(() => redis.stop());
    // The service's Redis at an address the test holds: the restarted server may bind any free port.
    const redisDoor = await startFrontDoor();
    cleanup.push(() => redisDoor.close());
    redisDoor.open(redis.url);
    const emulator: Emulator = await startEmulator({ timeScale: 0.01, clientSecret: secret.clientSecret });
    cleanup.push(() => emulator.close());

    // Downstreams that echo our request headers in their error bodies, as some do.
    const echo = (headers: Record<string, unknown>) => JSON.stringify({ error: "refused", youSent: headers });
    const main: SinkServer = await startSinkServer((request) => (request.index === 0 ? { status: 500, body: echo(request.headers) } : {}));
    const refusing: SinkServer = await startSinkServer((request) => ({ status: 400, body: echo(request.headers) }));
    cleanup.push(() => main.close(), () => refusing.close());
    const routeHeaders = { Authorization: `Bearer ${secret.routeToken}`, "X-Api-Key": secret.routeApiKey };
    const routesFile = join(dir, "routes.json");
    await writeFile(
      routesFile,
      JSON.stringify([
        { name: "main", match: "*", url: main.url, secret: routeSecret, headers: routeHeaders },
        { name: "refusing", match: "*", url: refusing.url, secret: routeSecret, headers: routeHeaders },
        // Credentials in the URL, and nothing listening there: connection refused.
        { name: "unreachable", match: "*", url: `http://hookuser:${secret.routeUrlPassword}@127.0.0.1:9/services/${secret.routeUrlPath}`, maxAttemptsPerEvent: 2, headers: routeHeaders },
      ]),
    );
    const env = {
      REDIS_URL: `redis://:${secret.redisPassword}@127.0.0.1:${redisDoor.port}`,
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: dir,
      LOG_LEVEL: "debug",
      ROUTES_FILE: routesFile,
      WEBHOOK_USERNAME: webhookUser,
      WEBHOOK_PASSWORD: secret.webhookPassword,
      ADMIN_TOKEN: secret.adminToken,
      MGMT_API_BASE_URL: emulator.apiBaseUrl,
      MGMT_TOKEN_URL: emulator.tokenUrl,
      MGMT_CLIENT_ID: "emulator-client",
      MGMT_CLIENT_SECRET: secret.clientSecret,
      DISPATCH_BACKOFF_BASE_MS: "50",
      DISPATCH_LOCK_DURATION_MS: "2000",
    };
    const service: ServiceProcess = await startServiceProcess("all", env);
    cleanup.push(() => service.kill());
    const publicUrl = service.publicUrl!;
    const webhook = (body: string, authorization: string) =>
      fetch(`${publicUrl}/webhooks`, { method: "POST", body, headers: { authorization, "content-type": "application/json" } });
    const rightAuth = `Basic ${forms.webhookBasic}`;
    const admin = { authorization: `Bearer ${secret.adminToken}` };
    const cli = async (what: string, args: string[], extra: Record<string, string> = {}) => {
      // Always this test's service (ADMIN_URL): never one that happens to run on the default ports.
      const run = await runCli(args, { ...env, ADMIN_URL: service.adminUrl, ...extra });
      keep(`cli ${what} (exit ${run.code}) stdout`, run.stdout);
      keep(`cli ${what} stderr`, run.stderr);
      return run;
    };

    // 1. A webhook delivered after a 500 that echoed our headers; refused by one route (a dead letter), unreachable at another.
    const first = userEvent();
    expect((await keepAnswer("webhook", await webhook(JSON.stringify(first), rightAuth))).status).toBe(202);
    await main.until((requests) => requests.some((request) => request.status === 200 && request.headers["webhook-id"] === first.id), 30_000);
    await refusing.untilReceived(1, 30_000);

    // 2. Refused webhooks: wrong password, the password as a bearer token, right password for another user.
    for (const authorization of [`Basic ${b64(`${webhookUser}:wrong`)}`, `Bearer ${secret.webhookPassword}`, `Basic ${b64(`someone:${secret.webhookPassword}`)}`, secret.webhookPassword]) {
      expect((await keepAnswer("refused webhook", await webhook(JSON.stringify(userEvent()), authorization))).status).toBe(401);
    }

    // 3. Reconcile: the tenant failed to deliver (a stream with a wrong password), the CLI recovers it.
    const streamId = await createStream(emulator, `${publicUrl}/webhooks`, { auth: { method: "basic", username: webhookUser, password: "not-the-password" } });
    const lost = [await emit(emulator, "user.created"), await emit(emulator, "user.created")];
    for (const id of lost) expect((await settled(emulator, id, 15_000)).status).toBe("failed");
    const reconciled = await cli("reconcile", ["reconcile", lost[0]!, "--json"]);
    expect(JSON.parse(reconciled.stdout.trim()).outcome, reconciled.stderr).toBe("recovered");

    // 4. The admin API: reconcile, job state, an event, the dashboard (Basic), a wrong token.
    const posted = await keepAnswer("admin reconcile", await fetch(`${service.adminUrl}/admin/reconcile`, { method: "POST", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ eventIds: [lost[1]], streamId }) }));
    const jobId = (JSON.parse(posted.text) as { jobs: Array<{ jobId: string }> }).jobs[0]!.jobId;
    for (const deadline = Date.now() + 30_000; ; await new Promise((ok) => setTimeout(ok, 100))) {
      const state = await keepAnswer("admin job", await fetch(`${service.adminUrl}/admin/reconcile/${jobId}`, { headers: admin }));
      if ((JSON.parse(state.text) as { outcome?: string }).outcome) break;
      expect(Date.now(), "reconcile job outcome").toBeLessThan(deadline);
    }
    await keepAnswer("admin event", await fetch(`${service.adminUrl}/admin/events/${first.id}`, { headers: admin }));
    await keepAnswer("dashboard", await fetch(`${service.adminUrl}/admin/queues`, { headers: { authorization: `Basic ${forms.adminBasic}` } }));
    for (const status of ["failed", "completed"]) {
      await keepAnswer("dashboard api", await fetch(`${service.adminUrl}/admin/queues/api/queues?activeQueue=refusing&status=${status}&page=1`, { headers: admin }));
    }
    expect((await keepAnswer("admin wrong token", await fetch(`${service.adminUrl}/admin/events/${first.id}`, { headers: { authorization: `Bearer ${secret.adminToken}-wrong` } }))).status).toBe(401);

    // 5. Tenant commands: with a wrong client secret (refused), and updates sending a write-only password.
    expect((await cli("streams list, wrong secret", ["streams", "list", "--json"], { MGMT_CLIENT_SECRET: secret.wrongClientSecret })).code).toBe(1);
    await cli("streams update, unknown stream", ["streams", "update", "est_000000000000000000000x", "--endpoint", "https://sk.example.com/webhooks", "--auth", "basic", "--username", webhookUser, "--password", secret.webhookPassword]);
    expect((await cli("streams connect", ["streams", "connect", streamId, "--public-url", "https://sk.example.com"])).code).toBe(0);
    await cli("dead-letters list", ["dead-letters", "list", "--json"]);
    await cli("dead-letters list (table)", ["dead-letters", "list"]);

    // 6. A Redis outage: 503 while it is down, back to 202 after.
    await redis.kill();
    redisDoor.shut();
    expect((await keepAnswer("webhook, Redis down", await webhook(JSON.stringify(userEvent()), rightAuth))).status).toBe(503);
    await keepAnswer("readyz, Redis down", await fetch(`${service.adminUrl}/readyz`));
    await keepAnswer("metrics, Redis down", await fetch(`${service.adminUrl}/metrics`));
    await keepAnswer("admin event, Redis down", await fetch(`${service.adminUrl}/admin/events/${first.id}`, { headers: admin }));
    redis = await startRedisServer(redisOptions);
    redisDoor.open(redis.url);
    for (const deadline = Date.now() + 30_000; (await fetch(`${service.adminUrl}/readyz`)).status !== 200; await new Promise((ok) => setTimeout(ok, 100))) {
      expect(Date.now(), "service ready again after Redis came back").toBeLessThan(deadline);
    }
    const after = userEvent();
    expect((await keepAnswer("webhook, Redis back", await webhook(JSON.stringify(after), rightAuth))).status).toBe(202);
    await main.until((requests) => requests.some((request) => request.headers["webhook-id"] === after.id && request.status === 200), 30_000);
    await keepAnswer("metrics", await fetch(`${service.adminUrl}/metrics`));

    expect(await service.stop()).toBe(0);
    keep("service logs", service.output());

    // 7. Settings refused at start (exit 2): the message names the bad value, without its credentials.
    const badSettings = await cli("start, bad settings", ["start", "--role", "worker"], {
      REDIS_URL: `http://:${secret.redisPassword}@127.0.0.1:1`,
      MGMT_API_BASE_URL: `ftp://emulator-client:${secret.clientSecret}@127.0.0.1/api/v2`,
    });
    expect(badSettings.code).toBe(2);
    expect(badSettings.stderr).toMatch(/^error: .*REDIS_URL.*MGMT_API_BASE_URL/);

    // The capture is real: debug lines, the failures above, and the route's token reached its downstream.
    const logs = service.output();
    expect(logs).toMatch(/"level":20/);
    expect(logs).toMatch(/dead letter/);
    expect(logs).toMatch(/webhook refused/);
    expect(main.requests[0]!.headers.authorization).toBe(`Bearer ${secret.routeToken}`);

    const leaks: string[] = [];
    for (const { where, text } of captured) {
      for (const [name, value] of Object.entries(forms)) {
        const at = text.indexOf(value);
        if (at >= 0) leaks.push(`${where}: ${name} in …${text.slice(Math.max(0, at - 120), at + value.length + 40)}…`);
      }
      const token = jwt.exec(text);
      if (token) leaks.push(`${where}: an access token (JWT) in …${text.slice(Math.max(0, token.index - 120), token.index + 40)}…`);
    }
    expect(leaks).toEqual([]);
  });
});

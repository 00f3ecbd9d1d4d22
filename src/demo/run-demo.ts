import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startService } from "../app.js";
import { loadConfig } from "../config/config.js";
import { startEmulator } from "../emulator/start-emulator.js";
import { createLogger } from "../logging/logger.js";
import { freePort } from "../redis/redis-server.js";
import { startDemoSink } from "./start-demo-sink.js";

interface DemoOptions {
  /** Keep everything running after the story, until Ctrl-C, to look at the dashboard. */
  keepRunning: boolean;
  /** REDIS_URL of the user's environment; unset: an embedded redis-server in a temp dir. */
  redisUrl?: string;
  say(line: string): void;
}

/**
 * The end-to-end story on one machine: the tenant emulator pushes events to Streamkeeper,
 * which delivers them to a sample downstream; one stream is set up with a wrong password,
 * so Streamkeeper refuses its event (401) and the tenant gives up on it at once; with no
 * one asking, the sweep finds it in the tenant's failed-deliveries list and recovers it.
 * Last, an event no stream subscribes to (the push never sends it) arrives by the pull of
 * the tenant's event log (PULL=on, narrowed to that type so the sweep's story stays its own).
 */
export async function runDemo({ keepRunning, redisUrl, say }: DemoOptions): Promise<boolean> {
  const dataDir = await mkdtemp(join(tmpdir(), "streamkeeper-demo-"));
  const startedAt = new Date(Date.now() - 1000).toISOString();
  const cleanup: Array<() => Promise<void>> = [() => rm(dataDir, { recursive: true, force: true })];
  try {
    const emulator = await startEmulator({ timeScale: 0.05 });
    cleanup.unshift(() => emulator.close());
    say(`1. tenant emulator listening on ${emulator.url}`);

    const sink = await startDemoSink((delivery) => say(`   downstream received ${delivery.eventId} (${delivery.type}, origin ${delivery.origin}, route ${delivery.route})`));
    cleanup.unshift(() => sink.close());
    say(`2. sample downstream listening on ${sink.url}`);

    // Two routes on the one downstream: `default` gets every event; `audit` the user events
    // but never the tenant's test events (testEvents: drop, step 13).
    const routesFile = join(dataDir, "routes.yaml");
    await writeFile(routesFile, `routes:\n  - name: default\n    match: ["*"]\n    url: ${sink.routeUrl("default")}\n  - name: audit\n    match: ["user.*"]\n    url: ${sink.routeUrl("audit")}\n    testEvents: drop\n`);
    const secret = () => randomBytes(18).toString("base64url");
    const webhook = { username: "tenant", password: secret() };
    const adminToken = secret();
    // The public port is chosen first: PUBLIC_URL is how the sweep knows which streams are ours.
    const port = await freePort();
    const config = loadConfig({
      REDIS_URL: redisUrl,
      DATA_DIR: dataDir,
      QUEUE_PREFIX: `demo-${Date.now().toString(36)}`,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      RECONCILE_SWEEP_INTERVAL_SECONDS: "2",
      RECONCILE_SWEEP_LOOKBACK_SECONDS: "600",
      HOST: "127.0.0.1",
      ADMIN_PORT: "0",
      WEBHOOK_USERNAME: webhook.username,
      WEBHOOK_PASSWORD: webhook.password,
      ROUTES_FILE: routesFile,
      MGMT_API_BASE_URL: emulator.apiBaseUrl,
      MGMT_TOKEN_URL: emulator.tokenUrl,
      MGMT_CLIENT_ID: "emulator-client",
      MGMT_CLIENT_SECRET: "emulator-secret",
      ADMIN_TOKEN: adminToken,
      DISPATCH_BACKOFF_BASE_MS: "100",
      PULL: "on",
      PULL_EVENT_TYPES: "group.created",
      LOG_LEVEL: "error",
    });
    const service = await startService(config, createLogger("error"), "all");
    cleanup.unshift(() => service.close());
    say(`3. Streamkeeper receiving at ${service.publicUrl}/webhooks/<stream-id>, admin at ${service.adminUrl}`);

    const good = await createStream(emulator.url, "demo-users", ["user.created", "user.updated"], `${service.publicUrl}/webhooks`, webhook);
    const broken = await createStream(emulator.url, "demo-orgs-wrong-password", ["organization.created"], `${service.publicUrl}/webhooks`, { ...webhook, password: "not-the-password" });
    say(`4. tenant streams: ${good} (users, right credentials) and ${broken} (organizations, WRONG password)`);

    const userEvents: string[] = [];
    const ada = `auth0|${randomBytes(6).toString("hex")}`;
    for (const [type, email] of [["user.created", "ada@example.com"], ["user.updated", "ada@example.com"], ["user.created", "alan@example.com"]] as const) {
      userEvents.push(await emit(emulator.url, type, { user_id: email.startsWith("ada") ? ada : `auth0|${randomBytes(6).toString("hex")}`, email }));
    }
    const lost = await emit(emulator.url, "organization.created", { id: `org_${randomBytes(8).toString("hex")}`, name: "acme" });
    say(`5. tenant emitted ${userEvents.length} user events and organization event ${lost}`);

    await until(() => userEvents.every((id) => sink.received.some((delivery) => delivery.eventId === id)), 20_000);
    say(`6. every user event reached the downstream through Streamkeeper`);

    const record = await until(async () => {
      const res = await fetch(`${emulator.url}/emulator/deliveries?event_id=${lost}`);
      const { deliveries } = (await res.json()) as { deliveries: Array<{ status: string; attempts: Array<{ error_message?: string }> }> };
      return deliveries.find((delivery) => delivery.status === "failed");
    }, 20_000);
    say(`7. the tenant gave up on ${lost} after ${record.attempts.length} attempt(s): ${record.attempts.at(-1)?.error_message ?? "failed"} (Streamkeeper refused the wrong password with 401)`);

    const admin = { authorization: `Bearer ${adminToken}` };
    say(`8. nobody runs reconcile: every 2 s the sweep lists the failed deliveries of the streams pointing at PUBLIC_URL (${config.env.PUBLIC_URL})`);
    await until(() => sink.received.some((delivery) => delivery.eventId === lost), 30_000);
    const sweep = await until(async () => {
      const res = await fetch(`${service.adminUrl}/admin/sweep`, { headers: admin });
      const { streams } = (await res.json()) as { streams: Array<{ streamId: string; found: number; recovered: number }> };
      return streams.find((stream) => stream.streamId === broken && stream.recovered > 0);
    }, 20_000);
    say(`   ${lost} recovered by the sweep, found without being told (GET /admin/sweep: stream ${broken} found ${sweep.found}, recovered ${sweep.recovered})`);
    say(`   the CLI shows the same window, acting on nothing: streamkeeper reconcile --since 10m --dry-run`);
    const recovered = sink.received.filter((delivery) => delivery.eventId === lost);
    const swept = recovered.length === 1 && recovered[0]!.origin === "reconcile";

    const unpushed = await emit(emulator.url, "group.created", { id: `grp_${randomBytes(8).toString("hex")}`, name: "admins" });
    say(`9. tenant emitted ${unpushed} (group.created): no stream subscribes to it, so the push never sends it`);
    const pulled = await until(() => sink.received.find((delivery) => delivery.eventId === unpushed), 30_000);
    say(`    ${unpushed} arrived by the pull of the tenant's event log (PULL=on; origin ${pulled.origin}); streamkeeper pull status shows where it stands`);
    const ok = swept && pulled.origin === "pull";
    say(`10. ${ok ? "done" : "NOT as expected"}: the event that failed at the tenant was recovered and delivered once (origin ${recovered[0]?.origin}), the one never pushed was pulled; the downstream had ${sink.received.length} deliveries (each user event once per route: default and audit)`);
    const archived = await showArchive({ adminUrl: service.adminUrl, admin, user: ada, since: startedAt, say });
    const tested = await showTestEvent({ emulator, streamId: good, adminUrl: service.adminUrl, admin, sink, say });
    say(`   metrics:   ${service.adminUrl}/metrics`);
    say(`   dashboard: ${service.adminUrl}/admin/queues (any user name; the password is the demo's ADMIN_TOKEN, shown only with --keep-running)`);
    say(`   event:     ${service.adminUrl}/admin/events/${lost} (Authorization: Bearer <ADMIN_TOKEN>)`);
    if (keepRunning) {
      say(`   ADMIN_TOKEN for this demo run: ${adminToken}`);
      say("   running until Ctrl-C");
      await new Promise<void>((ok) => {
        process.once("SIGINT", () => ok());
        process.once("SIGTERM", () => ok());
      });
    }
    return ok && archived && tested;
  } finally {
    for (const step of cleanup) await step().catch(() => {});
  }
}

/**
 * The archive's part of the story: what happened to one user (a search by entity, with
 * each route's outcome), then the user events sent again to the downstream (a replay).
 * With the archive unavailable (no Postgres could start), it says so and passes.
 */
async function showArchive({ adminUrl, admin, user, since, say }: { adminUrl: string; admin: Record<string, string>; user: string; since: string; say(line: string): void }): Promise<boolean> {
  const search = async () => {
    const res = await fetch(`${adminUrl}/admin/events?entity=${encodeURIComponent(user)}`, { headers: admin });
    return res.status === 404 ? undefined : ((await res.json()) as { events: Array<{ id: string; type: string; time: string; origin: string; outcomes: Record<string, string> }> });
  };
  if (!(await search())) {
    say("11. the archive is off here (no Postgres could start): no search or replay in this run");
    return true;
  }
  say(`11. what happened to user ${user}? streamkeeper events search --entity '${user}'`);
  const found = await until(async () => {
    const page = await search();
    return page && page.events.length === 2 && page.events.every((event) => event.outcomes.default === "delivered") ? page : undefined;
  }, 30_000);
  for (const event of found.events) say(`   ${event.id}  ${event.time}  ${event.type}  origin ${event.origin}  default=${event.outcomes.default}`);
  say("12. send every user event of this run again: streamkeeper replay --route default --since 10m --type 'user.*'");
  const res = await fetch(`${adminUrl}/admin/replays`, { method: "POST", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ route: "default", since, type: "user.*" }) });
  const { replayId, matched } = (await res.json()) as { replayId: string; matched: number };
  const status = await until(async () => {
    const answer = (await (await fetch(`${adminUrl}/admin/replays/${replayId}`, { headers: admin })).json()) as { state: string; sent: number; delivered: number };
    return answer.state === "done" && answer.delivered >= answer.sent ? answer : undefined;
  }, 30_000);
  say(`   replay ${replayId}: ${matched} matched, ${status.sent} sent, ${status.delivered} delivered (X-Streamkeeper-Origin: replay, the original webhook-id)`);
  return status.delivered === matched;
}

/**
 * The tenant's dashboard "test" button (POST /event-streams/{id}/test): a test event
 * (`a0purpose: "test"`) that the `default` route delivers and the `audit` route, with
 * `testEvents: drop`, leaves out (outcome `filtered`, in GET /admin/events/:id).
 */
async function showTestEvent({ emulator, streamId, adminUrl, admin, sink, say }: { emulator: { apiBaseUrl: string; tokenUrl: string; audience: string }; streamId: string; adminUrl: string; admin: Record<string, string>; sink: { received: Array<{ eventId: string }> }; say(line: string): void }): Promise<boolean> {
  const token = (await (await fetch(emulator.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_type: "client_credentials", client_id: "emulator-client", client_secret: "emulator-secret", audience: emulator.audience }),
  })).json()) as { access_token: string };
  const res = await fetch(`${emulator.apiBaseUrl}/event-streams/${streamId}/test`, { method: "POST", headers: { authorization: `Bearer ${token.access_token}`, "content-type": "application/json" }, body: JSON.stringify({ event_type: "user.created" }) });
  if (!res.ok) throw new Error(`the emulator refused the test event: ${res.status} ${await res.text()}`);
  const testId = ((await res.json()) as { event: { id: string } }).event.id;
  say(`13. the tenant's "send a test event" button (POST /api/v2/event-streams/${streamId}/test) sent ${testId}, marked a0purpose "test"`);
  const outcomes = await until(async () => {
    const described = (await (await fetch(`${adminUrl}/admin/events/${testId}`, { headers: admin })).json()) as { routes?: Array<{ route: string; state: string }> };
    const states = Object.fromEntries((described.routes ?? []).map((route) => [route.route, route.state]));
    return states.default === "delivered" && states.audit === "filtered" ? states : undefined;
  }, 30_000);
  const copies = sink.received.filter((delivery) => delivery.eventId === testId).length;
  say(`    route default delivered it; route audit (testEvents: drop) left it out: ${outcomes.audit} (streamkeeper events show ${testId})`);
  return copies === 1;
}

async function createStream(emulatorUrl: string, name: string, types: string[], endpoint: string, auth: { username: string; password: string }) {
  const res = await fetch(`${emulatorUrl}/emulator/streams`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      name,
      subscriptions: types.map((event_type) => ({ event_type })),
      destination: { type: "webhook", configuration: { webhook_endpoint: endpoint, webhook_authorization: { method: "basic", ...auth } } },
    }),
  });
  if (!res.ok) throw new Error(`the emulator refused the demo stream: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function emit(emulatorUrl: string, type: string, object: Record<string, unknown>) {
  const res = await fetch(`${emulatorUrl}/emulator/events`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type, data: { object } }) });
  if (!res.ok) throw new Error(`the emulator refused the demo event: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Polls until `check` gives a truthy value; the demo's steps each have a deadline. */
async function until<T>(check: () => T | Promise<T>, timeoutMs: number): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`the demo step did not complete within ${timeoutMs / 1000} s`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

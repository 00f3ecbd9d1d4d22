import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../chaos/run-cli.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "route-recipes-token";

/** The recipes' block of docs/routes.md, every url pointed at a local sink. */
async function recipes(sinkUrl: string): Promise<string> {
  const doc = await readFile(new URL("../../docs/routes.md", import.meta.url), "utf8");
  const block = /```yaml\n(routes:[\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error("docs/routes.md has no ```yaml block starting with routes:");
  return block.replace(/^(\s+url: ).*$/gm, `$1${sinkUrl}`);
}

function user(type: string, object: Record<string, unknown>, overrides: Partial<CloudEvent> = {}): CloudEvent {
  const event = userEvent({ type, ...overrides });
  Object.assign((event.data as { object: object }).object, { name: "Ada Lovelace", ...object });
  return event;
}

function organization(type: string, object: Record<string, unknown>): CloudEvent {
  return userEvent({ type, data: { object } });
}

/**
 * docs/routes.md: each recipe tried through `streamkeeper routes try` on the running
 * service (real Redis, real Postgres for the archive), and the filtered outcome seen where
 * the contract says: search, the event view, the metric.
 */
describe("route recipes (docs/routes.md), tried through routes try", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let service: TestService;
  let dir: string;
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    dir = await mkdtemp(join(tmpdir(), "sk-recipes-"));
    await writeFile(join(dir, "routes.yaml"), await recipes(sink.url));
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, ROUTES_FILE: join(dir, "routes.yaml"), ADMIN_TOKEN: adminToken });
    cliEnv = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, LOG_LEVEL: "silent" };
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  /** `routes try <route> --file` on this event, as JSON. */
  const tried = async (route: string, event: CloudEvent) => {
    const file = join(dir, `${event.id}.json`);
    await writeFile(file, JSON.stringify(event));
    const run = await runCli(["routes", "try", route, "--file", file, "--json"], cliEnv);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    return JSON.parse(run.stdout) as { match: boolean; filter: boolean | null; testEvents: boolean; deliver: boolean; body: unknown; error?: string };
  };

  it("when one organization is wanted, then its own events and its members' go, another organization's do not", async () => {
    expect(await tried("acme-only", organization("organization.updated", { id: "org_acme", name: "Acme" }))).toMatchObject({ match: true, filter: true, deliver: true });
    expect(await tried("acme-only", organization("organization.member.added", { organization: { id: "org_acme" }, user: { user_id: "auth0|1" } }))).toMatchObject({ filter: true, deliver: true });
    expect(await tried("acme-only", organization("organization.updated", { id: "org_other" }))).toEqual({ match: true, filter: false, testEvents: true, deliver: false, body: null });
    expect(await tried("acme-only", user("user.created", {}))).toMatchObject({ match: false, deliver: false });
  });

  it("when paying users only are wanted, then a pro or enterprise user goes and a free one, or one without a plan, does not", async () => {
    expect(await tried("paying-users", user("user.updated", { app_metadata: { plan: "enterprise" } }))).toMatchObject({ filter: true, deliver: true });
    expect(await tried("paying-users", user("user.updated", { app_metadata: { plan: "free" } }))).toMatchObject({ filter: false, deliver: false });
    expect(await tried("paying-users", user("user.updated", {}))).toMatchObject({ filter: false, deliver: false });
  });

  it("when test events are dropped, then a test event does not go and the same event without the mark does, as the CloudEvent itself", async () => {
    const real = user("user.created", {});
    expect(await tried("warehouse", { ...real, a0purpose: "test" })).toEqual({ match: true, filter: null, testEvents: false, deliver: false, body: null });
    expect(await tried("warehouse", real)).toEqual({ match: true, filter: null, testEvents: true, deliver: true, body: real });
  });

  it("when the CRM takes a contact, then the body is the contact, free when the user has no plan", async () => {
    const event = user("user.created", { app_metadata: { plan: "pro" } });
    const object = (event.data as { object: Record<string, string> }).object;
    expect((await tried("crm-contact", event)).body).toEqual({ email: object.email, externalId: object.user_id, name: "Ada Lovelace", plan: "pro", signedUpAt: object.created_at });
    expect((await tried("crm-contact", user("user.updated", {}))).body).toMatchObject({ plan: "free" });
    expect(await tried("crm-contact", user("user.created", {}, { a0purpose: "test" }))).toMatchObject({ testEvents: false, deliver: false, body: null });
  });

  it("when Slack gets a message, then the body is its text with the plan when there is one", async () => {
    expect((await tried("slack-signups", user("user.created", { email: "ada@example.com", app_metadata: { plan: "pro" } }))).body).toEqual({ text: "New sign-up: ada@example.com (pro)" });
    expect((await tried("slack-signups", user("user.created", { email: "bob@example.com" }))).body).toEqual({ text: "New sign-up: bob@example.com" });
  });

  it("when a live event is filtered on a route, then it is tried by id, searched by outcome filtered, shown in the event view, and the printed answer reads step by step", async () => {
    const free = user("user.updated", { app_metadata: { plan: "free" } });
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(free))).status).toBe(202);
    await expect.poll(async () => (await runCli(["events", "search", "--route", "paying-users", "--outcome", "filtered"], cliEnv)).stdout).toContain(free.id);
    const view = (await (await fetch(`${service.adminUrl}/admin/events/${free.id}`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { routes: unknown[]; timeline: { routes: unknown[] } };
    expect(view.routes).toContainEqual({ route: "paying-users", state: "filtered", attempts: 0 });
    expect(view.timeline.routes).toContainEqual(expect.objectContaining({ route: "paying-users", outcome: "filtered" }));
    const printed = await runCli(["routes", "try", "paying-users", "--event", free.id], cliEnv);
    expect(printed).toEqual({ code: 0, stderr: "", stdout: "match       yes\nfilter      no\ntestEvents  yes\ndeliver     no\n" });
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/streamkeeper_dispatch_total\{route="paying-users",outcome="filtered"\} [1-9]/);
  });

  it("when routes are listed, then each shows its filter, test-event rule and transform, in the command and the operator view", async () => {
    const run = await runCli(["routes", "list", "--json"], cliEnv);
    const listed = JSON.parse(run.stdout) as Array<{ name: string; filter?: object; testEvents: string; transform?: string }>;
    expect(listed.find((route) => route.name === "paying-users")).toMatchObject({ filter: { "data.object.app_metadata.plan": { $in: ["pro", "enterprise"] } }, testEvents: "deliver" });
    expect(listed.find((route) => route.name === "warehouse")).toMatchObject({ testEvents: "drop" });
    expect(listed.find((route) => route.name === "slack-signups")?.transform).toContain("New sign-up");
    expect((await runCli(["routes", "list"], cliEnv)).stdout).toMatch(/warehouse .*drop tests/);
    // The operator view's overview carries them too (its routes table shows them).
    const overview = (await (await fetch(`${service.adminUrl}/admin/overview`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { routes: Array<{ name: string; testEvents: string; filter: object | null; transform: string | null }> };
    expect(overview.routes.find((route) => route.name === "warehouse")).toMatchObject({ testEvents: "drop", filter: null, transform: null });
    expect(overview.routes.find((route) => route.name === "paying-users")?.filter).toEqual({ "data.object.app_metadata.plan": { $in: ["pro", "enterprise"] } });
  });

  it("when routes try is asked wrongly, then one error line says what to change, exit 2", async () => {
    expect(await runCli(["routes", "try", "paying-users"], cliEnv)).toMatchObject({ code: 2, stderr: expect.stringMatching(/^error: give --event <event-id> .* or --file <path>/) });
    expect(await runCli(["routes", "try", "nope", "--event", "evt_1"], cliEnv)).toMatchObject({ code: 2, stderr: "error: no configured route nope: the routes are acme-only, paying-users, warehouse, crm-contact, slack-signups\n" });
    expect(await runCli(["routes", "try", "warehouse", "--event", "evt_never"], cliEnv)).toMatchObject({ code: 2, stderr: expect.stringContaining("no archived event evt_never") });
    const notEvent = join(dir, "not-event.json");
    await writeFile(notEvent, '{"id":"evt_1"}');
    expect(await runCli(["routes", "try", "warehouse", "--file", notEvent], cliEnv)).toMatchObject({ code: 2, stderr: "error: event.source is required (CloudEvents 1.0)\n" });
  });
});

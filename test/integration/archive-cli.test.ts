import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../chaos/run-cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { refusedUrl } from "../helpers/explicit-ports.js";

const adminToken = "archive-cli-token";
const user = "auth0|clisearch0000000000000001";

describe("archive commands: events search, events forget, replay", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let audit: SinkServer;
  let service: TestService;
  let dir: string;
  let cliEnv: Record<string, string>;
  const ids: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    audit = await startSinkServer();
    dir = await mkdtemp(join(tmpdir(), "sk-archive-cli-"));
    await writeFile(join(dir, "routes.json"), JSON.stringify([{ name: "crm", match: "*", url: sink.url }, { name: "audit", match: ["user.created"], url: audit.url }]));
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, ROUTES_FILE: join(dir, "routes.json"), ADMIN_TOKEN: adminToken });
    cliEnv = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, LOG_LEVEL: "silent" };
    for (let index = 0; index < 4; index++) {
      const event = userEvent({ type: index === 0 ? "user.created" : "user.updated" });
      (event.data as { object: { user_id: string } }).object.user_id = user;
      ids.push(event.id);
      expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    }
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await audit?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it("when events are searched by user, then one line per event names its id, type, entity, origin and outcome per route", async () => {
    await expect.poll(async () => (await runCli(["events", "search", "--entity", user, "--outcome", "delivered", "--route", "crm"], cliEnv)).stdout.trim().split("\n").length).toBe(4);
    // The audit route's outcome may still be on its way to the archive: polled too.
    const line = new RegExp(`^${ids[0]}  \\S+Z  user.created  ${user.replace("|", "\\|")}  webhook  (crm=delivered,audit=delivered|audit=delivered,crm=delivered)\\n$`);
    await expect.poll(async () => runCli(["events", "search", "--entity", user, "--type", "user.created"], cliEnv)).toMatchObject({ code: 0, stdout: expect.stringMatching(line) });
    const json = await runCli(["events", "search", "--entity", user, "--json", "--limit", "2"], cliEnv);
    const lines = json.stdout.trim().split("\n").map((line) => JSON.parse(line) as { id: string });
    expect(lines).toHaveLength(2);
    expect(ids).toEqual(expect.arrayContaining(lines.map((line) => line.id)));
  });

  it("when a replay is run to completion, then it says what it matched, sent and delivered", async () => {
    const before = audit.requests.length;
    const run = await runCli(["replay", "--route", "audit", "--since", "1h", "--type", "user.created"], cliEnv);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^replay rpl_\w+ done: 1 matched, 1 sent, 1 delivered, 0 failed\n$/);
    expect(run.code).toBe(0);
    expect(audit.requests.slice(before).map((request) => [request.headers["webhook-id"], request.headers["x-streamkeeper-origin"]])).toEqual([[ids[0], "replay"]]);
    const dry = await runCli(["replay", "--route", "crm", "--since", "1h", "--dry-run"], cliEnv);
    expect(dry.stdout).toBe("4 archived events match; nothing was sent (--dry-run)\n");
  });

  it("when replays were started elsewhere, then replay list shows every one newest first, status prints its state and counts, cancel stops a running one, and an unknown id is exit 1", async () => {
    // One started through the API (as the operator view does), slow enough (4 events at 0.2/s: 20 s) to be running while it is listed.
    const started = await fetch(`${service.adminUrl}/admin/replays`, { method: "POST", headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ route: "crm", since: "1h", rate: 0.2 }) });
    expect(started.status).toBe(202);
    const { replayId } = (await started.json()) as { replayId: string };
    const listed = (await (await fetch(`${service.adminUrl}/admin/replays`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { replays: Array<{ replayId: string; route: string; state: string; startedAt: string }> };
    expect(listed.replays.map((replay) => [replay.route, replay.state])).toEqual([["crm", "running"], ["audit", "done"]]);
    expect(listed.replays[0]!.replayId).toBe(replayId);
    expect(Date.parse(listed.replays[0]!.startedAt)).toBeGreaterThanOrEqual(Date.parse(listed.replays[1]!.startedAt));

    const list = await runCli(["replay", "list"], cliEnv);
    expect(list.stderr).toBe("");
    const lines = list.stdout.trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^REPLAY\s+ROUTE\s+STATE\s+MATCHED\s+SENT\s+DELIVERED\s+FAILED\s+STARTED$/);
    expect(lines[1]).toMatch(new RegExp(`^${replayId}\\s+crm\\s+running\\s+4\\s+\\d\\s+\\d\\s+0\\s+\\S+Z$`));
    expect(lines[2]).toMatch(/^rpl_\w+\s+audit\s+done\s+1\s+1\s+1\s+0\s+\S+Z$/);
    const json = await runCli(["replay", "list", "--json"], cliEnv);
    expect(json.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { replayId: string }).replayId)[0]).toBe(replayId);

    const status = await runCli(["replay", "status", replayId], cliEnv);
    expect(status).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`^replay ${replayId} to crm running: 4 matched, \\d sent, \\d delivered, 0 failed\\n$`)) });
    const cancel = await runCli(["replay", "cancel", replayId, "--json"], cliEnv);
    expect(cancel.code).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({ replayId, state: "cancelled" });
    expect((await runCli(["replay", "status", replayId], cliEnv)).stdout).toMatch(/ cancelled: 4 matched/);

    const unknown = await runCli(["replay", "status", "rpl_nothing"], cliEnv);
    expect({ code: unknown.code, stdout: unknown.stdout, stderr: unknown.stderr }).toEqual({ code: 1, stdout: "", stderr: "error: no replay rpl_nothing: streamkeeper replay list shows every replay's id\n" });
    expect((await runCli(["replay", "cancel", "rpl_nothing"], cliEnv)).code).toBe(1);
    const bare = await runCli(["replay", "--since", "1h"], cliEnv);
    expect({ code: bare.code, stderr: bare.stderr }).toEqual({ code: 2, stderr: "error: --route is required to start a replay (streamkeeper replay --route <name> --since <t>); replay list, status and cancel follow the replays\n" });
  });

  it("when an entity is forgotten, then the command prints how many events it erased and a replay says it skips them", async () => {
    const run = await runCli(["events", "forget", "--entity", user], cliEnv);
    expect(run.stdout).toMatch(new RegExp(`^erased the payloads of 4 archived events of ${user.replace(/[|]/g, "\\|")}(, and removed \\d+ kept delivery jobs? holding them from Redis)?; their ids, types, times and outcomes are kept\n$`));
    expect((await runCli(["events", "search", "--entity", user], cliEnv)).stdout.trim().split("\n").every((line) => line.endsWith("(erased)"))).toBe(true);
    const replay = await runCli(["replay", "--route", "crm", "--since", "1h", "--entity", user], cliEnv);
    expect(replay.stdout).toContain("skipped 4 events whose payload was erased (events forget): not sent");
    // Asked again, as JSON: nothing left to erase.
    const again = await runCli(["events", "forget", "--entity", user, "--json"], cliEnv);
    expect({ code: again.code, stdout: again.stdout }).toEqual({ code: 0, stdout: `${JSON.stringify({ entity: user, erased: 0, jobs: 0 })}\n` });
  });

  it("when one event is shown, then its arrival and each route's outcome and attempts read one a line; --json prints the service's object", async () => {
    await expect.poll(async () => (await runCli(["events", "show", ids[0]!], cliEnv)).stdout).toMatch(/^route audit: delivered$/m);
    const shown = await runCli(["events", "show", ids[0]!], cliEnv);
    expect(shown.code).toBe(0);
    expect(shown.stdout.split("\n").slice(0, 2)).toEqual([`event ${ids[0]}  user.created`, expect.stringMatching(new RegExp(String.raw`^arrived \S+Z by webhook \(stream est_38ANnv8pQhqsZrX2VFbftv, entity ${user.replace("|", "\\|")}\)$`))]);
    expect(shown.stdout).toMatch(/^route crm: delivered\n {2}\S+Z {2}delivered {2}status 200$/m);
    const json = await runCli(["events", "show", ids[0]!, "--json"], cliEnv);
    expect(JSON.parse(json.stdout)).toMatchObject({ eventId: ids[0], type: "user.created", timeline: { arrival: { origin: "webhook" } } });
    const unknown = await runCli(["events", "show", "evt_neverseen000000000000"], cliEnv);
    expect({ code: unknown.code, stdout: unknown.stdout }).toEqual({ code: 1, stdout: "" });
    expect(unknown.stderr).toBe(
      `error: no event evt_neverseen000000000000 is known to the service at ${service.adminUrl} (neither its archive nor the ids it remembers for DEDUPE_TTL_SECONDS): find ids with streamkeeper events search\n`,
    );
  });

  it("when a command is typed as a new user would, then each mistake gets one line in our words: an empty entity, a mistyped flag, a wrong token", async () => {
    const empty = await runCli(["events", "forget", "--entity", ""], cliEnv);
    expect({ code: empty.code, stderr: empty.stderr }).toEqual({ code: 2, stderr: "error: --entity is empty: give the id of the user, organization or group whose payloads to erase\n" });
    const mistyped = await runCli(["replay", "--route", "crm", "--from", "2h"], cliEnv);
    expect(mistyped.code).toBe(2);
    expect(mistyped.stderr).toMatch(/^error: unknown option '--from'/);
    const missing = await runCli(["replay", "--route", "crm"], cliEnv);
    expect({ code: missing.code, stderr: missing.stderr }).toEqual({ code: 2, stderr: "error: --since is required to start a replay (streamkeeper replay --route <name> --since <t>); replay list, status and cancel follow the replays\n" });
    const outcome = await runCli(["events", "search", "--outcome", "bogus"], cliEnv);
    expect({ code: outcome.code, stderr: outcome.stderr }).toEqual({ code: 2, stderr: "error: --outcome: must be one of delivered, dead_letter, stale, filtered, retry, moved, dropped, parked, pending, unrouted\n" });
    const backwards = await runCli(["replay", "--route", "crm", "--since", "1h", "--until", "2h"], cliEnv);
    expect(backwards.code).toBe(2);
    expect(backwards.stderr).toMatch(/^error: until \(\S+Z\) must be after since \(\S+Z\): give a later until, or an earlier since\n$/);
    const command = await runCli(["event", "search"], cliEnv);
    expect({ code: command.code, stderr: command.stderr }).toEqual({ code: 2, stderr: "error: unknown command 'event' (Did you mean events?) (run with --help for usage)\n" });
    for (const args of [["events", "search"], ["events", "show", ids[0]!], ["replay", "--route", "crm", "--since", "1h", "--dry-run"]]) {
      const wrong = await runCli(args, { ...cliEnv, ADMIN_TOKEN: "not-the-token" });
      expect({ code: wrong.code, stderr: wrong.stderr }, args.join(" ")).toEqual({
        code: 2,
        stderr: `error: the service at ${service.adminUrl} refused this shell's ADMIN_TOKEN: set ADMIN_TOKEN to the service's admin token, or unset it to use the one the service generated (DATA_DIR/admin-token) with its DATA_DIR\n`,
      });
    }
  });

  it("when the input is bad or no service answers, then one error line says what to change, with the exit code", async () => {
    const unknown = await runCli(["replay", "--route", "nowhere", "--since", "1h"], cliEnv);
    expect({ code: unknown.code, stderr: unknown.stderr }).toEqual({ code: 2, stderr: "error: no route named nowhere; the routes are crm, audit\n" });
    const old = await runCli(["replay", "--route", "crm", "--since", "90d"], cliEnv);
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/^error: since \S+ is older than the archive keeps: it holds events from \S+ on \(ARCHIVE_RETENTION_DAYS=30\); give a later since\n$/);
    const date = await runCli(["events", "search", "--since", "yesterday"], cliEnv);
    expect({ code: date.code, stderr: date.stderr }).toEqual({ code: 2, stderr: 'error: --since "yesterday": give a duration back from now (90m, 6h, 7d), a date (2026-11-25: its midnight UTC) or a time in ISO 8601 (2026-11-25T06:35:17Z)\n' });
    // A date is its midnight UTC, for every command: the day an event arrived finds it.
    const arrived = (JSON.parse((await runCli(["events", "search", "--id", ids[0]!, "--json"], cliEnv)).stdout) as { time: string }).time;
    const byDate = await runCli(["events", "search", "--id", ids[0]!, "--since", arrived.slice(0, 10)], cliEnv);
    expect({ code: byDate.code, stderr: byDate.stderr }).toEqual({ code: 0, stderr: "" });
    expect(byDate.stdout).toMatch(new RegExp(`^${ids[0]} {2}`));
    const nobody = await runCli(["events", "search", "--entity", user], { ...cliEnv, ADMIN_URL: refusedUrl });
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/^error: no service answers at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\): start it with `streamkeeper start`, or set ADMIN_URL to where it runs\n$/);
  });
});

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, inject, vi } from "vitest";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { ensureBuilt, runCli } from "../helpers/dispatch-cli.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

describe("streamkeeper dead-letters", () => {
  let harness: DispatchHarness;
  let orders: SinkServer;
  let audit: SinkServer;
  let dir: string;
  let env: Record<string, string>;
  const events = [userEvent(), userEvent({ type: "user.deleted" })];

  beforeAll(async () => {
    const built = ensureBuilt();
    // Both routes refuse everything at first: two dead letters each.
    orders = await startSinkServer(() => ({ status: 400, body: "schema mismatch" }));
    audit = await startSinkServer(() => ({ status: 422 }));
    const routes = [testRoute("orders", orders.url), testRoute("audit", audit.url)];
    harness = await createDispatchHarness(redisUrl, routes);
    dir = await mkdtemp(join(tmpdir(), "sk-dead-letters-"));
    await writeFile(join(dir, "routes.json"), JSON.stringify(routes));
    env = { REDIS_URL: redisUrl, QUEUE_PREFIX: harness.prefix, ROUTES_FILE: join(dir, "routes.json"), LOG_LEVEL: "warn" };
    harness.startDispatcher();
    for (const event of events) await harness.store.store(event, { origin: "webhook" });
    await vi.waitFor(async () => expect(await collectDeadLetters(harness.queues)).toHaveLength(4), { timeout: 30_000, interval: 50 });
    await built;
  }, 60_000);
  afterAll(async () => {
    await harness.close();
    await Promise.all([orders.close(), audit.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  it("when listing, then a table shows every dead letter with its route, ids, attempts and reason", async () => {
    const { code, stdout } = await runCli(["dead-letters", "list"], env);
    expect(code).toBe(0);
    const [header, ...rows] = stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ROUTE\s+JOB ID\s+EVENT ID\s+TYPE\s+ATTEMPTS\s+FAILED REASON\s+FAILED AT$/);
    expect(rows).toHaveLength(4);
    expect(rows.find((row) => row.startsWith("orders") && row.includes(events[1]!.id))).toMatch(
      new RegExp(`^orders\\s+${events[1]!.id}\\s+${events[1]!.id}\\s+user.deleted\\s+1\\s+downstream answered 400: schema mismatch\\s+\\d{4}-`),
    );
  });

  it("when listing with --json, then it prints one JSON array", async () => {
    const { code, stdout } = await runCli(["dead-letters", "list", "--json"], env);
    expect(code).toBe(0);
    const letters = JSON.parse(stdout) as { route: string; eventId: string; attempts: number }[];
    expect(letters.map((letter) => `${letter.route}/${letter.eventId}`).sort()).toEqual(
      ["orders", "audit"].flatMap((route) => events.map((event) => `${route}/${event.id}`)).sort(),
    );
  });

  it("when replay gets neither ids nor --all, then it exits 2 saying what to give", async () => {
    const { code, stderr } = await runCli(["dead-letters", "replay"], env);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error: give the job ids to replay .* or --all\n$/);
  });

  it("when replay gets an unknown id, then it exits 1 naming it and replays nothing", async () => {
    const { code, stderr } = await runCli(["dead-letters", "replay", `audit/${events[0]!.id}`, "evt_nope"], env);
    expect(code).toBe(1);
    // No service runs in this test: the command says so in a note line, then the error.
    expect(stderr.replace(/^note: no service has published its configuration .*\n/, "")).toBe("error: no dead letter with job id evt_nope; nothing was replayed (see `streamkeeper dead-letters list`)\n");
    expect(audit.requests).toHaveLength(2);
  });

  it("when one route is fixed and its dead letter replayed by <route>/<job-id>, then only that one is delivered", async () => {
    audit.answer = () => ({ status: 204 });
    const { code, stdout } = await runCli(["dead-letters", "replay", `audit/${events[0]!.id}`], env);
    expect([code, stdout]).toEqual([0, `replayed audit/${events[0]!.id}\n`]);
    await audit.until((requests) => requests.some((request) => request.status === 204));
    await expect.poll(async () => (await collectDeadLetters(harness.queues)).length).toBe(3);
  });

  it("when every route is fixed and replay --all runs, then every dead letter is delivered", async () => {
    orders.answer = () => ({ status: 200 });
    const { code, stdout } = await runCli(["dead-letters", "replay", "--all"], env);
    expect(code).toBe(0);
    expect(stdout.trimEnd().split("\n").sort()).toEqual(
      [`replayed audit/${events[1]!.id}`, ...events.map((event) => `replayed orders/${event.id}`)].sort(),
    );
    await orders.until((requests) => requests.filter((request) => request.status === 200).length === 2);
    await audit.until((requests) => requests.filter((request) => request.status === 204).length === 2);
    await expect.poll(async () => (await runCli(["dead-letters", "list"], env)).stdout).toBe("no dead letters\n");
  });
});

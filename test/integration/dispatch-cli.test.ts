import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/dispatch-cli.js";
import { testRoute } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { adminHeaders } from "../helpers/credentials.js";

const adminToken = "dead-letters-cli-token";

/** The running service's dead letters, read through its admin API. */
async function deadLetters(service: TestService): Promise<unknown[]> {
  const answer = await fetch(`${service.adminUrl}/admin/dead-letters`, { headers: adminHeaders(adminToken) });
  return ((await answer.json()) as { deadLetters: unknown[] }).deadLetters;
}

describe("streamkeeper dead-letters", () => {
  let service: TestService;
  let orders: SinkServer;
  let audit: SinkServer;
  let dir: string;
  let env: Record<string, string>;
  const events = [userEvent(), userEvent({ type: "user.deleted" })];

  beforeAll(async () => {
    // Both routes refuse everything at first: two dead letters each.
    orders = await startSinkServer(() => ({ status: 400, body: "schema mismatch" }));
    audit = await startSinkServer(() => ({ status: 422 }));
    const routes = [testRoute("orders", orders.url), testRoute("audit", audit.url)];
    dir = await mkdtemp(join(tmpdir(), "sk-dead-letters-"));
    await writeFile(join(dir, "routes.json"), JSON.stringify(routes));
    service = await startTestService({ ROUTES_FILE: join(dir, "routes.json"), ADMIN_TOKEN: adminToken });
    // The command's shell: the service's admin API, and a Redis it cannot reach (a closed port).
    env = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, REDIS_URL: "redis://127.0.0.1:9", LOG_LEVEL: "warn" };
    for (const event of events) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await vi.waitFor(async () => expect(await deadLetters(service)).toHaveLength(4), { timeout: 30_000, interval: 50 });
  }, 60_000);
  afterAll(async () => {
    await service.close();
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
    expect(stderr).toBe("error: no dead letter with job id evt_nope; nothing was replayed (see `streamkeeper dead-letters list`)\n");
    expect(audit.requests).toHaveLength(2);
  });

  it("when one route is fixed and its dead letter replayed by <route>/<job-id>, then only that one is delivered", async () => {
    audit.answer = () => ({ status: 204 });
    const { code, stdout } = await runCli(["dead-letters", "replay", `audit/${events[0]!.id}`], env);
    expect([code, stdout]).toEqual([0, `replayed audit/${events[0]!.id}\n`]);
    await audit.until((requests) => requests.some((request) => request.status === 204));
    await expect.poll(async () => (await deadLetters(service)).length).toBe(3);
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

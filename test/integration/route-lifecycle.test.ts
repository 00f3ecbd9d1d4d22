import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { registry } from "../../src/metrics/registry.js";
import { runCli } from "../chaos/run-cli.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "route-lifecycle-token";

describe("a route renamed while events wait for it", () => {
  const open: Array<{ close(): Promise<unknown> }> = [];
  afterAll(async () => {
    for (const thing of open.reverse()) await thing.close().catch(() => {});
  });

  it("when the service restarts with the route under another name, then it warns, lists the old route as removed, and a move delivers its events there once", async () => {
    const prefix = `test-lifecycle-${randomUUID()}`;
    // The downstream is down: three events wait for route `default` (retrying).
    const down: SinkServer = await startSinkServer(() => ({ status: 503 }));
    open.push(down);
    const before: TestService = await startTestService({ QUEUE_PREFIX: prefix, DOWNSTREAM_URL: down.url, DISPATCH_BACKOFF_BASE_MS: "60000", ADMIN_TOKEN: adminToken });
    const events = [userEvent(), userEvent(), userEvent()];
    for (const event of events) expect((await before.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await down.until((requests) => new Set(requests.map((request) => request.headers["webhook-id"])).size === 3);
    await before.close();

    // Restarted with the route renamed `main`, the downstream back.
    const sink: SinkServer = await startSinkServer();
    open.push(sink);
    const dir = await mkdtemp(join(tmpdir(), "sk-lifecycle-"));
    open.push({ close: () => rm(dir, { recursive: true, force: true }) });
    const routesFile = join(dir, "routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "main", match: "*", url: sink.url }]));
    const logs = capturedLogger();
    const after: TestService = await startTestService({ QUEUE_PREFIX: prefix, ROUTES_FILE: routesFile, ADMIN_TOKEN: adminToken }, "all", logs.logger);
    open.push(after);

    const warnings = logs.lines.filter((line) => String(line.msg).startsWith("route default is not configured any more"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, route: "default", waiting: 3 });
    expect(String(warnings[0]!.msg)).toContain("streamkeeper routes move default <route>");
    expect(await registry.metrics()).toMatch(/^streamkeeper_route_orphaned_jobs\{route="default"\} 3$/m);

    const env = { ADMIN_URL: after.adminUrl, ADMIN_TOKEN: adminToken, REDIS_URL: "redis://127.0.0.1:9" };
    const listed = await runCli(["routes", "list", "--json"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { name: string; state: string; waiting: number }[]).map(({ name, state, waiting }) => ({ name, state, waiting }))).toEqual([
      { name: "main", state: "configured", waiting: 0 },
      { name: "default", state: "removed", waiting: 3 },
    ]);
    const table = await runCli(["routes", "list"], env);
    expect(table.stdout).toMatch(/^default\s+removed\s+3\s/m);

    // A configured route cannot be dropped; a drop needs --yes.
    const configured = await runCli(["routes", "drop", "main", "--yes"], env);
    expect(configured.code).toBe(2);
    expect(configured.stderr).toMatch(/^error: route main is configured/);
    expect((await runCli(["routes", "drop", "default"], env)).code).toBe(2);
    // A route with nothing waiting is named, with the command that lists those that have.
    const unknown = await runCli(["routes", "move", "nosuch", "main"], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: no removed route nosuch has events waiting: streamkeeper routes list/);

    const moved = await runCli(["routes", "move", "default", "main"], env);
    expect([moved.code, moved.stdout, moved.stderr]).toEqual([0, "moved 3 event(s) from default to main\n", ""]);
    await sink.until((requests) => requests.length >= 3);
    // Once each: nothing more arrives, and the old route holds nothing.
    await expect.poll(async () => (await runCli(["routes", "list", "--json"], env)).stdout).not.toContain('"removed"');
    expect(sink.requests.map((request) => request.headers["webhook-id"]).sort()).toEqual(events.map((event) => event.id).sort());
    expect(await registry.metrics()).not.toMatch(/^streamkeeper_route_orphaned_jobs\{route="default"\}/m);
  }, 300_000);
});

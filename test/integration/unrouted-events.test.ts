import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

async function unroutedCount(service: TestService, type: string): Promise<number> {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith(`streamkeeper_events_unrouted_total{type="${type}"} `));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

/** No silently dropped event: an event no route matches is stored, counted and shown as such. */
describe("events no route matches", () => {
  let dir: string;
  let sink: SinkServer;
  let service: TestService;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sk-unrouted-"));
    sink = await startSinkServer();
    const routesFile = join(dir, "routes.yaml");
    await writeFile(routesFile, `- name: users\n  match: user.*\n  url: ${sink.url}\n`);
    service = await startTestService({ ROUTES_FILE: routesFile, ADMIN_TOKEN: "t" });
  });

  afterAll(async () => {
    await service?.close();
    await sink?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("when an event's type matches no route, then it is counted in events_unrouted_total{type} and GET /admin/events/:id says unrouted", async () => {
    const before = await unroutedCount(service, "organization.created");
    const orphan = userEvent({ type: "organization.created", data: { object: { id: "org_1" } } });
    const routed = userEvent();
    for (const event of [orphan, routed]) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);

    expect(await unroutedCount(service, "organization.created")).toBe(before + 1);
    const described = (await (await fetch(`${service.adminUrl}/admin/events/${orphan.id}`, { headers: { authorization: "Bearer t" } })).json()) as { unrouted: boolean; routes: unknown[] };
    expect(described).toMatchObject({ unrouted: true, routes: [] });

    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === routed.id && request.status === 200));
    const routedDescribed = (await (await fetch(`${service.adminUrl}/admin/events/${routed.id}`, { headers: { authorization: "Bearer t" } })).json()) as { unrouted: boolean };
    expect(routedDescribed.unrouted).toBe(false);
    expect(sink.requests.map((request) => request.headers["webhook-id"])).not.toContain(orphan.id);
  });
});

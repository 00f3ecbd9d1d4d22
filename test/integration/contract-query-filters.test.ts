import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { userEvent } from "../helpers/fixtures.js";
import { until } from "../helpers/until.js";
import { adminHeaders } from "../helpers/credentials.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "filters-admin-token";
const alice = "auth0|alice00000000000000000a";
const bob = "auth0|bob0000000000000000000b";
const streamOne = "est_StreamOneStreamOneStream1";
const streamTwo = "est_StreamTwoStreamTwoStream2";

/**
 * CONTRACT.md "Archive, search and replay": every parameter of `GET /admin/events` and of
 * `POST /admin/replays`, each given where ignoring it would change the answer. Four events,
 * two streams, two entities, two routes (crm takes `user.*`; audit takes every type and
 * refuses the free plan with a 400, so those are dead letters there at once):
 *   e1 user.created  stream one  alice  gold   crm delivered, audit delivered
 *   e2 user.updated  stream two  bob    free   crm delivered, audit dead_letter
 *   e3 user.created  stream one  bob    free   crm delivered, audit dead_letter
 *   e4 organization.created  stream two  org  gold   audit delivered
 * Shown failing by hand, 16 breaks each alone: every condition of archive-queries.ts
 * eventsMatchingSql made `TRUE` in turn (id, type, entity, stream, since, until, route, the
 * after cursor; in outcomeMatches the outcome and its route), and every one of replays.ts
 * replayWindowWhere (since, until, type, entity, stream, outcome).
 */
describe("contract: every filter of search and replay", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let audit: SinkServer;
  let service: TestService;
  let dir: string;
  const events: CloudEvent[] = [];
  const arrived: string[] = [];

  const event = (type: string, stream: string, entity: string, plan: string) => {
    const made = userEvent({ type, a0stream: stream });
    made.data = { object: type.startsWith("user.") ? { user_id: entity } : { id: entity }, plan };
    return made;
  };
  const search = async (query: string) => {
    const answer = await fetch(`${service.adminUrl}/admin/events?${query}`, { headers: adminHeaders(adminToken) });
    expect(answer.status).toBe(200);
    return (await answer.json()) as { events: Array<{ id: string }>; next?: string };
  };
  /** The events' numbers (1 to 4) a search answers, newest first as it answers them. */
  const found = async (query: string) => (await search(query)).events.map((row) => events.findIndex((sent) => sent.id === row.id) + 1);
  const matched = async (body: object) => {
    const answer = await fetch(`${service.adminUrl}/admin/replays`, { method: "POST", headers: adminHeaders(adminToken, { "content-type": "application/json" }), body: JSON.stringify({ since: arrived[0], dryRun: true, ...body }) });
    // A dry run: 200 with the count, nothing started.
    expect(answer.status).toBe(200);
    return ((await answer.json()) as { matched: number }).matched;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    audit = await startSinkServer((request) => ({ status: request.body.includes('"plan":"free"') ? 400 : 200 }));
    dir = await mkdtemp(join(tmpdir(), "sk-filters-"));
    const routes = [
      { name: "crm", match: "user.*", url: sink.url },
      { name: "audit", match: "*", url: audit.url },
    ];
    await writeFile(join(dir, "routes.json"), JSON.stringify(routes));
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, ROUTES_FILE: join(dir, "routes.json"), ADMIN_TOKEN: adminToken });
    events.push(
      event("user.created", streamOne, alice, "gold"),
      event("user.updated", streamTwo, bob, "free"),
      event("user.created", streamOne, bob, "free"),
      event("organization.created", streamTwo, "org_filtersfilters0001", "gold"),
    );
    // One at a time, the clock moved on between them: each arrives at its own millisecond.
    for (const sent of events) {
      expect((await service.post("/webhooks", JSON.stringify(sent))).status).toBe(202);
      const answered = Date.now();
      while (Date.now() === answered) await new Promise((next) => setImmediate(next));
    }
    // Every outcome archived: 3 on crm, 4 on audit.
    // The archive makes its tables as it starts, beside the first answers: "no such table" is a wait too.
    const archivedOutcomes = () => db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE outcome IN ('delivered', 'dead_letter')").catch((error: { code?: string }) => (error.code === "42P01" ? [{ n: "0" }] : Promise.reject(error as Error)));
    await until("7 outcomes archived", async () => (await archivedOutcomes())[0]!.n === "7");
    for (const sent of events) arrived.push((await db.query<{ arrived_at: Date }>("SELECT arrived_at FROM events WHERE id = $1", [sent.id]))[0]!.arrived_at.toISOString());
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await audit?.close();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it("when GET /admin/events is given each parameter, then it answers exactly the events that parameter selects", async () => {
    expect(await found("")).toEqual([4, 3, 2, 1]);
    expect(await found(`id=${events[1]!.id}`)).toEqual([2]);
    expect(await found("type=user.created")).toEqual([3, 1]);
    expect(await found(`entity=${encodeURIComponent(bob)}`)).toEqual([3, 2]);
    expect(await found(`stream=${streamOne}`)).toEqual([3, 1]);
    expect(await found(`since=${arrived[1]}`)).toEqual([4, 3, 2]);
    expect(await found(`until=${arrived[2]}`)).toEqual([2, 1]);
    expect(await found("route=crm")).toEqual([3, 2, 1]);
    expect(await found("outcome=dead_letter")).toEqual([3, 2]);
    // The outcome on that route only: crm has no dead letter.
    expect(await found("route=crm&outcome=dead_letter")).toEqual([]);
    expect(await found("route=audit&outcome=delivered")).toEqual([4, 1]);
    const first = await search("limit=3");
    expect(first.events).toHaveLength(3);
    expect(await found(`limit=3&after=${first.next}`)).toEqual([1]);
  });

  it("when POST /admin/replays is given each filter, then it matches exactly the events that filter selects on its route", async () => {
    // A replay's window is every archived event; the route's match applies when each is sent.
    expect(await matched({ route: "crm" })).toBe(4);
    expect(await matched({ route: "crm", type: "user.created" })).toBe(2);
    expect(await matched({ route: "crm", entity: bob })).toBe(2);
    expect(await matched({ route: "crm", stream: streamTwo })).toBe(2);
    expect(await matched({ route: "crm", until: arrived[2] })).toBe(2);
    expect(await matched({ route: "crm", since: arrived[1] })).toBe(3);
    expect(await matched({ route: "audit", outcome: "dead_letter" })).toBe(2);
    expect(await matched({ route: "crm", outcome: "dead_letter" })).toBe(0);
  });
});

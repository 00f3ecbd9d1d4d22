import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { userEvent } from "../helpers/fixtures.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "archive-admin-token";

describe("archive: search, timeline and erasure", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let service: TestService;
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${service.adminUrl}${path}`, { ...init, headers: { authorization: `Bearer ${adminToken}`, ...(init.headers ?? {}) } });
  const search = async (query: string) => (await (await admin(`/admin/events?${query}`)).json()) as { events: Array<{ id: string; type: string; entity?: string; origin: string; outcomes: Record<string, string>; erased: boolean }>; next?: string };

  /** Posts each event once the previous one's 202 came and the clock has moved on: arrivals (in ms) differ, in posting order. */
  async function postInTurn(events: CloudEvent[]) {
    for (const event of events) {
      expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
      const answered = Date.now();
      while (Date.now() === answered) await new Promise((next) => setImmediate(next));
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken });
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await db?.drop();
  });

  it("when webhooks of several users and types are stored, then each is archived once with its outcome and search finds exactly the matching ones", async () => {
    const users = ["auth0|alice0000000000000000001", "auth0|bob00000000000000000002", "auth0|carol000000000000000003"];
    const events = Array.from({ length: 60 }, (_, index) => {
      const event = userEvent({ type: index % 3 === 0 ? "user.created" : "user.updated" });
      (event.data as { object: { user_id: string } }).object.user_id = users[index % users.length]!;
      return event;
    });
    await postInTurn(events);
    await sink.untilReceived(events.length);
    await expect.poll(async () => (await db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE outcome = 'delivered'"))[0]!.n).toBe(String(events.length));
    expect((await db.query<{ n: string }>("SELECT count(*) AS n FROM events"))[0]!.n).toBe(String(events.length));
    expect(await db.query("SELECT id FROM events GROUP BY id HAVING count(*) > 1")).toEqual([]);

    const byId = await search(`id=${events[7]!.id}`);
    expect(byId.events.map((event) => event.id)).toEqual([events[7]!.id]);
    expect(byId.events[0]).toMatchObject({ type: events[7]!.type, origin: "webhook", entity: users[1], outcomes: { default: "delivered" }, erased: false });

    // Newest first: the reverse of the order they were posted in.
    const newestFirst = (posted: typeof events) => posted.map((event) => event.id).reverse();
    const created = await search("type=user.created&limit=1000");
    expect(created.events.map((event) => event.id)).toEqual(newestFirst(events.filter((event) => event.type === "user.created")));
    const all = await search("type=user.*&limit=1000");
    expect(all.events.map((event) => event.id)).toEqual(newestFirst(events));

    // Keyset pages: every event of a user once, newest first.
    const ids: string[] = [];
    let after: string | undefined;
    do {
      const page = await search(`entity=${encodeURIComponent(users[0]!)}&limit=7${after ? `&after=${after}` : ""}`);
      ids.push(...page.events.map((event) => event.id));
      after = page.next;
    } while (after);
    expect(ids).toEqual(newestFirst(events.filter((_, index) => index % 3 === 0)));

    const [first] = await db.query<{ arrived_at: Date }>("SELECT arrived_at FROM events WHERE id = $1", [events[30]!.id]);
    const windowed = await search(`since=${first!.arrived_at.toISOString()}&limit=1000`);
    expect(windowed.events.map((event) => event.id)).toEqual(newestFirst(events.slice(30)));
  });

  it("when an event is described, then its timeline shows its arrival and each route's attempts and outcome", async () => {
    const event = userEvent();
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    await expect.poll(async () => ((await (await admin(`/admin/events/${event.id}`)).json()) as { timeline?: { routes: Array<{ outcome: string }> } }).timeline?.routes[0]?.outcome).toBe("delivered");
    const description = (await (await admin(`/admin/events/${event.id}`)).json()) as { timeline: { arrival: { origin: string; failedFirst: boolean }; routes: Array<{ route: string; attempts: Array<{ status?: number; outcome: string }> }> } };
    expect(description.timeline.arrival).toMatchObject({ origin: "webhook", failedFirst: false });
    expect(description.timeline.routes).toEqual([{ route: "default", outcome: "delivered", attempts: [expect.objectContaining({ status: 200, outcome: "delivered" })] }]);
  });

  it("when an entity is forgotten, then its payloads are gone from every table and search still lists its ids", async () => {
    const user = "auth0|forget00000000000000000005";
    const events = Array.from({ length: 5 }, () => {
      const event = userEvent();
      (event.data as { object: { user_id: string; email: string } }).object.user_id = user;
      (event.data as { object: { email: string } }).object.email = "forget-me@example.com";
      return event;
    });
    for (const event of events) expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    await expect.poll(async () => (await search(`entity=${encodeURIComponent(user)}`)).events.length).toBe(5);
    const answer = await admin(`/admin/entities/${encodeURIComponent(user)}`, { method: "DELETE" });
    expect(await answer.json()).toMatchObject({ entity: user, erased: 5 });
    const listed = await search(`entity=${encodeURIComponent(user)}`);
    expect(listed.events.map((event) => event.id).sort()).toEqual(events.map((event) => event.id).sort());
    expect(listed.events.every((event) => event.erased)).toBe(true);
    expect(await db.query("SELECT id FROM events WHERE entity = $1 AND payload IS NOT NULL", [user])).toEqual([]);
    // No column of any table holds the erased person's email any more.
    const tables = await db.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
    for (const { table_name } of tables) {
      expect(await db.query(`SELECT 1 FROM ${table_name} t WHERE t::text LIKE '%forget-me@example.com%'`)).toEqual([]);
    }
  });

  it("when search gets bad input, then it answers 400 saying what to change", async () => {
    const cases: Array<[string, RegExp]> = [
      ["since=yesterday", /since: must be a duration back from now \(90m, 6h, 7d\), a date/],
      ["limit=0", /limit: must be a whole number from 1 to 1000/],
      ["outcome=lost", /outcome: must be one of/],
      ["after=bm9wZQ", /after: give the `next` value/],
      ["colour=red", /unknown parameter colour/],
      ["route=a%00b", /^route: must not hold a NUL character/],
      // In our words, not zod's ("Invalid input: expected string, received array").
      ["id=a&id=b", /^id: must be given once$/],
    ];
    for (const [query, message] of cases) {
      const answer = await admin(`/admin/events?${query}`);
      expect(answer.status, query).toBe(400);
      expect(((await answer.json()) as { detail: string }).detail).toMatch(message);
    }
    // A NUL is no outage (503) either: ids and names holding one are archived (encoded), and searched as they are.
    for (const query of ["entity=%00", "stream=a%00b", "id=evt_%00"]) {
      const answer = await admin(`/admin/events?${query}`);
      expect(answer.status, query).toBe(200);
      expect(((await answer.json()) as { events: unknown[] }).events, query).toEqual([]);
    }
    // A replay or a park asked with a JSON list instead of an object names the body, not a nameless field.
    for (const path of ["/admin/replays", "/admin/routes/default/park"]) {
      const listed = await admin(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify([{ route: "default", since: "1h" }]) });
      expect(listed.status, path).toBe(400);
      expect(((await listed.json()) as { detail: string }).detail, path).toMatch(/^body: must be a JSON object, not a list/);
    }
    const erase = await admin("/admin/entities/%00", { method: "DELETE" });
    expect(erase.status).toBe(200);
    expect(await erase.json()).toMatchObject({ entity: "\0", erased: 0 });
  });
});

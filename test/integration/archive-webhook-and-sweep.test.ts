import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { createTestDatabase } from "../helpers/archive-database.js";
import { tenantId, userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials } from "../helpers/start-test-service.js";
import { createStream, emit, tenantEnv } from "./emulator-test-kit.js";
import { failedCount, until } from "./sweep-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { adminHeaders } from "../helpers/credentials.js";

/**
 * The archive at volume (docs/architecture.md, "The archive"): 5,000 events, some
 * recovered by the sweep from the tenant's failed deliveries (origin reconcile), the rest
 * pushed by webhook, over two routes of which one takes only `user.created`, so some events
 * have one route and the organization events none. Each is archived once with its origin
 * and every route's outcome, and search by id, type, entity and window returns exactly the
 * sets this test computes from what it sent.
 */
const sweepCount = 500;
const webhookCount = 4500;
const users = Array.from({ length: 30 }, (_, n) => `auth0|archiveuser${String(n).padStart(12, "0")}`);
const organizations = Array.from({ length: 10 }, (_, n) => `org_archive${String(n).padStart(10, "0")}`);
const types = ["user.created", "user.updated", "organization.created"] as const;
const adminToken = "archive-volume-admin-token";

/** What the routes below take: crm every user event, audit only user.created, none the organization events. */
function routesOf(type: string): string[] {
  if (type === "user.created") return ["audit", "crm"];
  if (type === "user.updated") return ["crm"];
  return [];
}

function dataOf(n: number): { type: (typeof types)[number]; entity: string; data: Record<string, unknown> } {
  const type = types[n % types.length]!;
  if (type === "organization.created") {
    const entity = organizations[Math.floor(n / types.length) % organizations.length]!;
    return { type, entity, data: { object: { id: entity, name: `organization ${n}` } } };
  }
  const entity = users[Math.floor(n / types.length) % users.length]!;
  return { type, entity, data: { object: { user_id: entity, email: `person-${n}@example.com` } } };
}

/** Runs `work` over `items` with at most `inFlight` at a time. */
async function inParallel<T>(items: T[], inFlight: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

interface Expected {
  id: string;
  type: string;
  entity: string;
  origin: "webhook" | "reconcile";
  routes: string[];
}

describe("archive: 5,000 events by webhook and by the sweep", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when 5,000 events arrive by webhook and by the sweep over two routes, then each is archived once with its origin and every route's outcome, and search by id, type, entity and window returns exactly the right ones", async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const crm = await startSinkServer();
    cleanup.push(() => crm.close());
    const audit = await startSinkServer();
    cleanup.push(() => audit.close());
    const dir = await mkdtemp(join(tmpdir(), "sk-archive-volume-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const routesFile = join(dir, "routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "crm", match: ["user.*"], url: crm.url }, { name: "audit", match: ["user.created"], url: audit.url }]));

    // The tenant fails every delivery while nothing listens at the service's address.
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const auth = { method: "basic" as const, username: testCredentials.username, password: testCredentials.password };
    const streamId = await createStream(emulator, `${publicUrl}/webhooks`, { auth, types: [...types] });
    const expected = new Map<string, Expected>();
    await inParallel(
      Array.from({ length: sweepCount }, (_, n) => n),
      20,
      async (n) => {
        const { type, entity, data } = dataOf(n);
        const id = await emit(emulator, type, data);
        expected.set(id, { id, type, entity, origin: "reconcile", routes: routesOf(type) });
      },
    );
    await until(`${sweepCount} failed deliveries`, async () => (await failedCount(emulator, streamId)) === sweepCount, 120_000);

    const service = await startTestService({
      ...tenantEnv(emulator),
      PUBLIC_URL: publicUrl,
      RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
      ARCHIVE: "on",
      ARCHIVE_DATABASE_URL: db.url,
      ROUTES_FILE: routesFile,
      ADMIN_TOKEN: adminToken,
    });
    cleanup.push(() => service.close());
    door.open(service.publicUrl!);
    const count = async (sql: string) => Number((await db.query<{ n: string }>(sql))[0]!.n);

    // The sweep's recoveries first, then two windows of webhooks, with the times between.
    // (The archive creates its tables once it reaches Postgres, off the start path.)
    await until(`the sweep's ${sweepCount} recoveries archived`, async () => (await count("SELECT count(*) AS n FROM events").catch(() => 0)) === sweepCount, 120_000);
    const firstWindow = await nextMillisecond();
    const send = async (events: CloudEvent[]) =>
      inParallel(events, 50, async (event) => {
        const answer = await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event));
        expect(answer.status, await answer.text()).toBe(202);
      });
    const webhooks = Array.from({ length: webhookCount }, (_, n) => {
      const { type, entity, data } = dataOf(sweepCount + n);
      const event = userEvent({ id: tenantId("evt"), type, data });
      expected.set(event.id, { id: event.id, type, entity, origin: "webhook", routes: routesOf(type) });
      return event;
    });
    const half = webhookCount / 2;
    await send(webhooks.slice(0, half));
    const secondWindow = await nextMillisecond();
    await send(webhooks.slice(half));
    const end = await nextMillisecond();

    // Every route's outcome archived: one delivered attempt per (event, route).
    const deliveries = [...expected.values()].reduce((sum, event) => sum + event.routes.length, 0);
    await until(
      `${deliveries} deliveries archived`,
      async () => (await count("SELECT count(*) AS n FROM (SELECT DISTINCT event_id, route FROM every_attempt WHERE outcome = 'delivered') d")) === deliveries,
      180_000,
    );
    expect(await count("SELECT count(*) AS n FROM events")).toBe(sweepCount + webhookCount);
    expect(await db.query("SELECT id FROM events GROUP BY id HAVING count(*) > 1")).toEqual([]);
    expect(await db.query("SELECT event_id, route FROM every_attempt WHERE outcome = 'delivered' GROUP BY event_id, route HAVING count(*) > 1")).toEqual([]);
    expect(await db.query("SELECT a.event_id FROM attempts a LEFT JOIN events e ON e.id = a.event_id WHERE e.id IS NULL LIMIT 1")).toEqual([]);

    const admin = async <T>(path: string): Promise<T> => {
      const answer = await fetch(`${service.adminUrl}${path}`, { headers: adminHeaders(adminToken) });
      expect(answer.status, path).toBe(200);
      return (await answer.json()) as T;
    };
    interface Found {
      id: string;
      type: string;
      entity?: string;
      origin: string;
      failedFirst: boolean;
      outcomes: Record<string, string>;
    }
    /** Every event a search finds, following its keyset pages. */
    const search = async (query: string): Promise<Found[]> => {
      const found: Found[] = [];
      let after: string | undefined;
      do {
        const page = await admin<{ events: Found[]; next?: string }>(`/admin/events?${query}&limit=1000${after ? `&after=${after}` : ""}`);
        found.push(...page.events);
        after = page.next;
      } while (after);
      return found;
    };
    const ids = (found: Found[]) => found.map((event) => event.id).sort();
    const idsWhere = (keep: (event: Expected) => boolean) => [...expected.values()].filter(keep).map((event) => event.id).sort();

    // The whole archive: each event once, with its origin, type, entity and each route's outcome.
    const everything = await search("type=*");
    expect(everything).toHaveLength(expected.size);
    for (const event of everything) {
      const sent = expected.get(event.id);
      expect(sent, event.id).toBeDefined();
      const outcomes = sent!.routes.length === 0 ? { "": "unrouted" } : Object.fromEntries(sent!.routes.map((route) => [route, "delivered"]));
      expect(event, event.id).toMatchObject({ type: sent!.type, entity: sent!.entity, origin: sent!.origin, failedFirst: sent!.origin === "reconcile", outcomes });
    }
    expect(new Set(everything.map((event) => event.origin))).toEqual(new Set(["webhook", "reconcile"]));

    // By id: one of each origin and route set.
    for (const type of types) {
      for (const origin of ["webhook", "reconcile"] as const) {
        const sent = [...expected.values()].find((event) => event.type === type && event.origin === origin)!;
        expect(ids(await search(`id=${sent.id}`))).toEqual([sent.id]);
      }
    }
    expect(await search(`id=${tenantId("evt")}`)).toEqual([]);

    // By type, exact and by prefix.
    expect(ids(await search("type=user.updated"))).toEqual(idsWhere((event) => event.type === "user.updated"));
    expect(ids(await search("type=user.*"))).toEqual(idsWhere((event) => event.type.startsWith("user.")));
    expect(ids(await search("type=organization.created"))).toEqual(idsWhere((event) => event.type === "organization.created"));

    // By entity: a user's events by both origins; an organization's.
    for (const entity of [users[0]!, users[17]!, organizations[3]!]) {
      const found = await search(`entity=${encodeURIComponent(entity)}`);
      expect(ids(found), entity).toEqual(idsWhere((event) => event.entity === entity));
      expect(found.length, entity).toBeGreaterThan(0);
    }
    expect(new Set((await search(`entity=${encodeURIComponent(users[0]!)}`)).map((event) => event.origin))).toEqual(new Set(["webhook", "reconcile"]));

    // By window: the sweep's, the first and the second half of the webhooks.
    const webhookIds = webhooks.map((event) => event.id);
    expect(ids(await search(`until=${firstWindow}`))).toEqual(idsWhere((event) => event.origin === "reconcile"));
    expect(ids(await search(`since=${firstWindow}&until=${secondWindow}`))).toEqual(webhookIds.slice(0, half).sort());
    expect(ids(await search(`since=${secondWindow}&until=${end}`))).toEqual(webhookIds.slice(half).sort());
    // Window and type together.
    expect(ids(await search(`since=${secondWindow}&type=user.created`))).toEqual(webhooks.slice(half).filter((event) => event.type === "user.created").map((event) => event.id).sort());

    // By route and outcome.
    expect(ids(await search("outcome=unrouted"))).toEqual(idsWhere((event) => event.routes.length === 0));
    expect(ids(await search("route=audit&outcome=delivered"))).toEqual(idsWhere((event) => event.routes.includes("audit")));

    // And the routes got each of theirs once.
    const received = (requests: { headers: Record<string, unknown> }[]) => requests.map((request) => String(request.headers["webhook-id"])).sort();
    expect(received(crm.requests)).toEqual(idsWhere((event) => event.routes.includes("crm")));
    expect(received(audit.requests)).toEqual(idsWhere((event) => event.routes.includes("audit")));
  }, 600_000);
});

/** An ISO time strictly after every arrival so far and at or before every later one. */
async function nextMillisecond(): Promise<string> {
  const boundary = Date.now() + 1;
  while (Date.now() <= boundary) await new Promise((resolve) => setImmediate(resolve));
  return new Date(boundary).toISOString();
}

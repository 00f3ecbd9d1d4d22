import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ArchiveRecord } from "../../src/archive/archive-record.js";
import { forgetEntity } from "../../src/archive/forget-entity.js";
import { decodePayload } from "../../src/archive/payload-codec.js";
import { writeArchiveBatch } from "../../src/archive/write-archive-batch.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { createArchiveDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";

const day = 86_400_000;

function eventOf(entity: string): CloudEvent {
  return userEvent({ data: { object: { user_id: entity, email: `${entity}@example.com` } } });
}

/**
 * Erasure in the archive (archive/forget-entity.ts) against a real Postgres: what goes (an
 * entity's payloads, its attempts' error texts), what stays (ids, outcomes, other
 * entities' rows), and the rewrite of each day it touched (new table files), not of others.
 */
describe("erasure of an entity's archived events", () => {
  let db: ArchiveDatabase;
  beforeAll(async () => void (db = await createArchiveDatabase()));
  afterAll(() => db?.drop());

  /** Each day partition's table file (a VACUUM FULL gives it a new one). */
  async function fileNodes(): Promise<Map<string, number>> {
    const rows = await db.query<{ name: string; node: number }>("SELECT c.relname AS name, pg_relation_filenode(c.oid)::int AS node FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname IN ('events', 'attempts')");
    return new Map(rows.map((row) => [row.name, row.node]));
  }
  const partitionOf = async (table: "events" | "attempts", where: string, value: string) =>
    (await db.query<{ name: string }>(`SELECT tableoid::regclass::text AS name FROM ${table} WHERE ${where} = $1`, [value]))[0]!.name;

  it("when an entity is forgotten, then its payloads and its attempts' errors are gone, the rest of its rows kept, other entities untouched, and each day it touched rewritten", async () => {
    const entity = `auth0|forget-${randomUUID()}`;
    const other = `auth0|keep-${randomUUID()}`;
    const now = Date.now();
    const today = eventOf(entity);
    const yesterday = eventOf(entity);
    const othersToday = eventOf(other);
    const othersTwoDaysAgo = eventOf(other);
    const attempt = (event: CloudEvent, receivedAt: number, error: string | undefined, outcome: "retry" | "delivered"): ArchiveRecord => ({ kind: "attempt", eventId: event.id, receivedAt, route: "crm", key: `${event.id}:${outcome}`, at: receivedAt + 10, status: error ? 400 : 200, ...(error ? { error } : {}), outcome });
    await writeArchiveBatch(db.pool, [
      { kind: "event", event: today, origin: "webhook", receivedAt: now - 1000, routes: ["crm"] },
      { kind: "event", event: yesterday, origin: "webhook", receivedAt: now - day, routes: ["crm"] },
      { kind: "event", event: othersToday, origin: "webhook", receivedAt: now - 2000, routes: ["crm"] },
      { kind: "event", event: othersTwoDaysAgo, origin: "webhook", receivedAt: now - 2 * day, routes: ["crm"] },
      attempt(today, now - 1000, `downstream answered 400: no user ${entity}@example.com`, "retry"),
      attempt(today, now - 1000, undefined, "delivered"),
      attempt(yesterday, now - day, "downstream answered 400: bad email", "retry"),
      attempt(othersToday, now - 2000, `downstream answered 400: no user ${other}@example.com`, "retry"),
    ]);
    const touchedDays = [await partitionOf("events", "id", today.id), await partitionOf("events", "id", yesterday.id), await partitionOf("attempts", "event_id", today.id), await partitionOf("attempts", "event_id", yesterday.id)];
    const untouchedDays = [await partitionOf("events", "id", othersTwoDaysAgo.id)];
    expect(new Set(touchedDays).size).toBe(4);
    expect(touchedDays).not.toContain(untouchedDays[0]);
    const nodesBefore = await fileNodes();

    expect(await forgetEntity(db.pool, entity, now)).toEqual({ erased: 2 });

    const events = await db.query<{ id: string; type: string; payload: Buffer | null; erased_at: Date | null }>("SELECT id, type, payload, erased_at FROM events WHERE id = ANY($1)", [[today.id, yesterday.id, othersToday.id, othersTwoDaysAgo.id]]);
    const byId = new Map(events.map((row) => [row.id, row]));
    for (const erased of [today, yesterday]) {
      expect(byId.get(erased.id)).toMatchObject({ type: erased.type, payload: null });
      expect(byId.get(erased.id)!.erased_at!.getTime()).toBeGreaterThanOrEqual(now);
    }
    for (const kept of [othersToday, othersTwoDaysAgo]) {
      expect(decodePayload(byId.get(kept.id)!.payload!)).toEqual(kept);
      expect(byId.get(kept.id)!.erased_at).toBeNull();
    }
    const attempts = await db.query<{ event_id: string; outcome: string; status: number; error: string | null }>("SELECT event_id, outcome, status, error FROM every_attempt WHERE event_id = ANY($1) ORDER BY event_id, outcome", [[today.id, yesterday.id, othersToday.id]]);
    expect(attempts).toEqual(
      expect.arrayContaining([
        { event_id: today.id, outcome: "retry", status: 400, error: null },
        { event_id: today.id, outcome: "delivered", status: 200, error: null },
        { event_id: yesterday.id, outcome: "retry", status: 400, error: null },
        { event_id: othersToday.id, outcome: "retry", status: 400, error: `downstream answered 400: no user ${other}@example.com` },
      ]),
    );
    expect(attempts).toHaveLength(4);
    const erasures = await db.query<{ erased_at: Date }>("SELECT erased_at FROM erasures WHERE entity = $1", [entity]);
    expect(erasures).toHaveLength(1);
    expect(erasures[0]!.erased_at.getTime()).toBeGreaterThanOrEqual(now);

    // Each day it touched has new table files (the old row versions gone with the old ones); the other day's did not move.
    const nodesAfter = await fileNodes();
    for (const name of touchedDays) expect(nodesAfter.get(name), name).not.toBe(nodesBefore.get(name));
    for (const name of untouchedDays) expect(nodesAfter.get(name), name).toBe(nodesBefore.get(name));
    // Its connection goes back to the pool with the pool's statement limit, not the rewrite's none.
    const limited = new pg.Pool({ connectionString: db.url, max: 1, statement_timeout: 5000 });
    try {
      expect(await forgetEntity(limited, other, now)).toEqual({ erased: 2 });
      expect((await limited.query<{ statement_timeout: string }>("SHOW statement_timeout")).rows[0]!.statement_timeout).toBe("5s");
    } finally {
      await limited.end();
    }

    // Asked again: nothing left to erase, but each day holding the entity is rewritten again (a rewrite that failed before is done now).
    expect(await forgetEntity(db.pool, entity, now)).toEqual({ erased: 0 });
    const nodesAgain = await fileNodes();
    for (const name of touchedDays.slice(0, 2)) expect(nodesAgain.get(name), name).not.toBe(nodesAfter.get(name));
  });
});

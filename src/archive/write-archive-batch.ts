import type pg from "pg";
import type { ArchiveRecord, EventRecord } from "./archive-record.js";
import { entityOf } from "./entity-of.js";
import { encodePayload } from "./payload-codec.js";
import { checkOut } from "./check-out.js";

export interface BatchResult {
  written: number;
  /** events archived before (a store retried after a Redis fault, an outbox entry read twice) */
  duplicate: number;
}

/**
 * Archives a batch of outbox records in one transaction: events in one multi-row INSERT,
 * attempts in another, both read from one JSON parameter (one round trip each, any batch
 * size). Nothing is archived twice: an event whose id is archived already is skipped (the
 * writers take one advisory lock per transaction, so the check cannot race), and an
 * attempt's key is its primary key (ON CONFLICT DO NOTHING).
 */
export async function writeArchiveBatch(pool: pg.Pool, records: ArchiveRecord[]): Promise<BatchResult> {
  const events = records.flatMap((record) =>
    record.kind !== "event"
      ? []
      : [{
          arrived_at: new Date(record.receivedAt).toISOString(),
          id: record.event.id,
          type: record.event.type,
          origin: record.origin,
          stream: record.streamId ?? (typeof record.event.a0stream === "string" ? record.event.a0stream : null),
          entity: entityOf(record.event) ?? null,
          // Recovered from the tenant's failed deliveries (reconcile, the sweep): it had failed it first.
          failed_first: record.origin === "reconcile",
          routes: record.routes,
          payload: encodePayload(record.event).toString("base64"),
        }],
  );
  const attempts = records.flatMap((record) =>
    record.kind !== "attempt"
      ? filteredRows(record)
      : [{
          arrived_at: new Date(record.receivedAt).toISOString(),
          event_id: record.eventId,
          route: record.route,
          // The key begins with the event's id (its job's id): kept without it, as the row has it already.
          attempt_key: record.key.startsWith(record.eventId) ? record.key.slice(record.eventId.length) : record.key,
          at: new Date(record.at).toISOString(),
          status: record.status ?? null,
          error: record.error ?? null,
          outcome: record.outcome,
          replay_id: record.replayId ?? null,
        }],
  );
  const client = await checkOut(pool);
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtext('streamkeeper archive writer'))");
    let written = 0;
    if (events.length > 0) {
      const inserted = await client.query(insertNewEvents, [JSON.stringify(events)]);
      written += inserted.rowCount ?? 0;
    }
    if (attempts.length > 0) {
      const inserted = await client.query(insertAttempts, [JSON.stringify(attempts)]);
      written += inserted.rowCount ?? 0;
    }
    await client.query("COMMIT");
    return { written, duplicate: events.length + attempts.length - written };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** An event's routes that filtered it out, as one attempt row each with outcome `filtered`, at its arrival: no job ran for them. */
function filteredRows(record: EventRecord): Array<{ arrived_at: string; event_id: string; route: string; attempt_key: string; at: string; status: number | null; error: string | null; outcome: string; replay_id: string | null }> {
  const at = new Date(record.receivedAt).toISOString();
  return (record.filtered ?? []).map((route) => ({ arrived_at: at, event_id: record.event.id, route, attempt_key: ":filtered", at, status: null, error: null, outcome: "filtered", replay_id: null }));
}

/** Archive the events of this batch that are not archived yet (the first arrival of an id in the batch); an entity erased since it arrived, without its payload. */
const insertNewEvents = `
INSERT INTO events (arrived_at, id, type, origin, stream, entity, failed_first, routes, payload)
SELECT DISTINCT ON (x.id) x.arrived_at, x.id, x.type, x.origin, x.stream, x.entity, x.failed_first, x.routes,
  CASE WHEN EXISTS (SELECT 1 FROM erasures r WHERE r.entity = x.entity AND r.erased_at >= x.arrived_at) THEN NULL ELSE decode(x.payload, 'base64') END
FROM jsonb_to_recordset($1::jsonb) AS x(arrived_at timestamptz, id text, type text, origin text, stream text, entity text, failed_first boolean, routes text[], payload text)
WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = x.id)
ORDER BY x.id, x.arrived_at
ON CONFLICT DO NOTHING`;

/** Archive the attempts of this batch; one written before is kept once. */
const insertAttempts = `
INSERT INTO attempts (arrived_at, event_id, route, attempt_key, at, status, error, outcome, replay_id)
SELECT x.arrived_at, x.event_id, x.route, x.attempt_key, x.at, x.status, x.error, x.outcome, x.replay_id
FROM jsonb_to_recordset($1::jsonb) AS x(arrived_at timestamptz, event_id text, route text, attempt_key text, at timestamptz, status integer, error text, outcome text, replay_id text)
ON CONFLICT DO NOTHING`;

import type pg from "pg";
import { arrivalKeyOf, outboxEventOf, type ArchiveRecord, type AttemptRecord, type OutboxEvent, type WritableRecord } from "./archive-record.js";
import { deliveredEntry, firstDeliveries, foldable } from "./first-deliveries.js";
import { encodePayloadText } from "./payload-codec.js";
import { idIs } from "./archive-queries.js";
import { checkOut } from "./check-out.js";
import { toArchiveText, toArchiveTextOrNull } from "./archive-text.js";

export interface BatchResult {
  written: number;
  /** events archived before (a store retried after a Redis fault, an outbox entry read twice) */
  duplicate: number;
}

/**
 * Archives a batch of outbox records in one transaction: events in one multi-row INSERT,
 * attempts in another, both read from one JSON parameter (one round trip each, any batch
 * size). A route's first delivery whose event is in the batch goes into the event's row
 * (first-deliveries.ts): one row per delivered event, not two. Nothing is archived twice:
 * an event whose id is archived already is skipped (the writers take one advisory lock per
 * transaction, so the check cannot race), and an attempt's key is its primary key
 * (ON CONFLICT DO NOTHING).
 */
export async function writeArchiveBatch(pool: pg.Pool, given: Array<ArchiveRecord | WritableRecord>): Promise<BatchResult> {
  const records = given.map((record) => (record.kind === "event" && "event" in record ? outboxEventOf(record) : record) as WritableRecord);
  const folded = firstDeliveries(records);
  const deliveredOf = new Map<string, string[]>();
  for (const [attempt, entry] of folded) {
    const key = arrivalKeyOf(attempt);
    const entries = deliveredOf.get(key);
    if (entries) entries.push(entry);
    else deliveredOf.set(key, [entry]);
  }
  const events = records.flatMap((record) =>
    record.kind !== "event"
      ? []
      : [{
          arrived_at: new Date(record.receivedAt).toISOString(),
          id: toArchiveText(record.id),
          type: toArchiveText(record.type),
          origin: record.origin,
          stream: toArchiveTextOrNull(record.stream),
          entity: toArchiveTextOrNull(record.entity),
          // Recovered from the tenant's failed deliveries (reconcile, the sweep): it had failed it first.
          failed_first: record.origin === "reconcile",
          routes: record.routes.map(toArchiveText),
          delivered: deliveredOf.get(arrivalKeyOf(record))?.join(",") ?? null,
          payload: encodePayloadText(record.eventText).toString("base64"),
        }],
  );
  const client = await checkOut(pool);
  try {
    await client.query(beginDurable);
    let written = 0;
    // Named: each connection plans the two inserts once, not per batch. Over the retention's
    // 30-odd day partitions of each table the plan was a fifth of Postgres's work per event
    // (bench/archive-writer-cost.ts: 37-40 µs against 50; docs/benchmarks.md).
    const inserted = new Set<string>();
    if (events.length > 0) {
      const rows = (await client.query<{ id: string; at: string }>({ name: "archive-insert-events", text: insertNewEvents, values: [JSON.stringify(events)] })).rows;
      for (const row of rows) inserted.add(`${row.id}\n${row.at}`);
      written += rows.length;
    }
    // A first delivery is in its event's row once that row is written now; else (its event
    // archived before, by id) it is a row of attempts like any other.
    const inRow = (record: AttemptRecord) => folded.has(record) && inserted.has(`${toArchiveText(record.eventId)}\n${record.receivedAt}`);
    const attempts = records.flatMap((record) => (record.kind !== "attempt" ? filteredRows(record) : inRow(record) ? [] : [attemptRow(record)]));
    // Written with their event's row, and counted with it as the attempts they are.
    const inRows = [...folded.keys()].filter(inRow).length;
    written += inRows;
    if (attempts.length > 0) {
      const rows = await client.query({ name: "archive-insert-attempts", text: insertAttempts, values: [JSON.stringify(attempts)] });
      written += rows.rowCount ?? 0;
    }
    await client.query("COMMIT");
    client.release();
    return { written, duplicate: events.length + inRows + attempts.length - written };
  } catch (error) {
    // Closed rather than pooled, which ends its transaction: after a timeout on a hung
    // server, a ROLLBACK or the next query would wait behind the unanswered statement.
    client.release(error as Error);
    throw error;
  }
}

type AttemptRow = { arrived_at: string; event_id: string; route: string; attempt_key: string; at: string; status: number | null; error: string | null; outcome: string; replay_id: string | null; delivered: string | null };

function attemptRow(record: AttemptRecord): AttemptRow {
  return {
    arrived_at: new Date(record.receivedAt).toISOString(),
    event_id: toArchiveText(record.eventId),
    route: toArchiveText(record.route),
    // The key begins with the event's id (its job's id): kept without it, as the row has it already.
    attempt_key: toArchiveText(record.key.startsWith(record.eventId) ? record.key.slice(record.eventId.length) : record.key),
    at: new Date(record.at).toISOString(),
    status: record.status ?? null,
    error: toArchiveTextOrNull(record.error),
    outcome: record.outcome,
    replay_id: toArchiveTextOrNull(record.replayId),
    // A delivery its event's row may keep already (a batch written before, read again): not written twice.
    delivered: foldable(record) ? deliveredEntry(record) : null,
  };
}

/**
 * One round trip: the transaction, its commit made durable whatever the server's or the
 * database's setting (the outbox records leave Redis once COMMIT returns, so an
 * asynchronous commit lost to a crash would be lost for good), and the writers' lock, so
 * the "archived already?" check of insertNewEvents cannot race another writer.
 */
export const beginDurable = "BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_advisory_xact_lock(hashtext('streamkeeper archive writer'))";

/** An event's routes that filtered it out, as one attempt row each with outcome `filtered`, at its arrival: no job ran for them. */
function filteredRows(record: OutboxEvent): AttemptRow[] {
  if (!record.filtered?.length) return [];
  const at = new Date(record.receivedAt).toISOString();
  return record.filtered.map((route) => ({ arrived_at: at, event_id: toArchiveText(record.id), route: toArchiveText(route), attempt_key: ":filtered", at, status: null, error: null, outcome: "filtered", replay_id: null, delivered: null }));
}

/**
 * Archive the events of this batch that are not archived yet (the first arrival of an id in
 * the batch; the writers' lock keeps the check from racing); an entity erased since it
 * arrived, without its payload; a delivery it keeps, unless a row of attempts has it already
 * (another writer took the delivery's record apart from its event's). Answers the rows written.
 */
const insertNewEvents = `
INSERT INTO events (arrived_at, id, type, origin, stream, entity, failed_first, routes, delivered, payload)
SELECT DISTINCT ON (x.id) x.arrived_at, x.id, x.type, x.origin, x.stream, x.entity, x.failed_first, x.routes,
  CASE WHEN x.delivered IS NOT NULL THEN (
    SELECT string_agg(d, ',') FROM unnest(string_to_array(x.delivered, ',')) AS d
    WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = x.arrived_at AND a.event_id = x.id AND a.route = split_part(d, ':', 1)
                        AND a.outcome = 'delivered' AND a.replay_id IS NULL AND a.at = x.arrived_at + split_part(d, ':', 2)::bigint * interval '1 millisecond')) END,
  CASE WHEN EXISTS (SELECT 1 FROM erasures r WHERE r.entity = x.entity AND r.erased_at >= x.arrived_at) THEN NULL ELSE decode(x.payload, 'base64') END
FROM json_to_recordset($1::json) AS x(arrived_at timestamptz, id text, type text, origin text, stream text, entity text, failed_first boolean, routes text[], delivered text, payload text)
WHERE NOT EXISTS (SELECT 1 FROM events e WHERE ${idIs("x.id")})
ORDER BY x.id, x.arrived_at
RETURNING id, (extract(epoch FROM arrived_at) * 1000)::bigint AS at -- its arrival in ms, as text: no date to parse per row`;

/**
 * Archive the attempts of this batch; one written before is kept once (its key, or for a
 * delivery its entry in its event's row); an erased entity's without the downstream's error
 * text (forget-entity.ts).
 */
const insertAttempts = `
INSERT INTO attempts (arrived_at, event_id, route, attempt_key, at, status, error, outcome, replay_id)
SELECT x.arrived_at, x.event_id, x.route, x.attempt_key, x.at, x.status,
  CASE WHEN x.error IS NOT NULL AND EXISTS (SELECT 1 FROM events e JOIN erasures r ON r.entity = e.entity WHERE e.arrived_at = x.arrived_at AND e.id = x.event_id) THEN NULL ELSE x.error END,
  x.outcome, x.replay_id
FROM json_to_recordset($1::json) AS x(arrived_at timestamptz, event_id text, route text, attempt_key text, at timestamptz, status integer, error text, outcome text, replay_id text, delivered text)
WHERE x.delivered IS NULL
   OR NOT EXISTS (SELECT 1 FROM events e WHERE e.arrived_at = x.arrived_at AND e.id = x.event_id AND position(',' || x.delivered || ',' in ',' || e.delivered || ',') > 0)
ON CONFLICT DO NOTHING`;

import type pg from "pg";
import type { CloudEvent } from "../events/cloud-event.js";
import { decodePayload } from "./payload-codec.js";
import { idIs } from "./archive-queries.js";
import { toArchiveText } from "./archive-text.js";

/** An archived event by its exact id (stored as archive-text.ts keeps it) as it arrived (its first arrival), `erased` once an erasure took its payload, undefined when the archive lacks the id. */
export async function archivedPayload(pool: pg.Pool, eventId: string): Promise<CloudEvent | "erased" | undefined> {
  const row = (await pool.query<{ payload: Buffer | null }>(`SELECT payload FROM events e WHERE ${idIs("$1")} ORDER BY arrived_at LIMIT 1`, [toArchiveText(eventId)])).rows[0];
  if (!row) return undefined;
  return row.payload ? decodePayload(row.payload) : "erased";
}

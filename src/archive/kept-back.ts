import type { WritableRecord } from "./archive-record.js";

/** A record a writer read from the outbox: its entry id, and when it was read. */
export interface ReadRecord {
  id: string;
  record: WritableRecord;
  readAt: number;
}

/**
 * Which records a writer keeps back for its next batch: an event with a route (not one that
 * filtered it) that no attempt in hand is for yet, read less than `holdMs` ago, with the
 * attempts in hand of that event. Its deliveries, a few milliseconds behind it in the outbox,
 * then go into its row (first-deliveries.ts) rather than into rows of their own. At most
 * `maxHeld` events are kept back; the rest are written now, and their deliveries later as
 * rows of attempts.
 */
export function keptBack(reads: ReadRecord[], now: number, holdMs: number, maxHeld: number): { write: ReadRecord[]; hold: ReadRecord[] } {
  const attempted = new Set<string>();
  for (const { record } of reads) if (record.kind === "attempt") attempted.add(`${record.eventId}\n${record.receivedAt}\n${record.route}`);
  const held = new Set<string>();
  for (const { record, readAt } of reads) {
    if (record.kind !== "event" || now - readAt >= holdMs || held.size >= maxHeld) continue;
    const filtered = record.filtered ?? [];
    const awaiting = record.routes.some((route) => !filtered.includes(route) && !attempted.has(`${record.id}\n${record.receivedAt}\n${route}`));
    if (awaiting) held.add(`${record.id}\n${record.receivedAt}`);
  }
  const write: ReadRecord[] = [];
  const hold: ReadRecord[] = [];
  for (const read of reads) {
    const { record } = read;
    const event = record.kind === "event" ? `${record.id}\n${record.receivedAt}` : `${record.eventId}\n${record.receivedAt}`;
    (held.has(event) ? hold : write).push(read);
  }
  return { write, hold };
}

import { arrivalKeyOf, type WritableRecord } from "./archive-record.js";

/** A record a writer read from the outbox: its entry id, and when it was read (`performance.now()`). */
export interface ReadRecord {
  id: string;
  record: WritableRecord;
  readAt: number;
}

export interface KeptBack {
  /** What to write now of what was kept back and of `records` (read now, in outbox order); the rest is kept. */
  take(records: ReadRecord[], now: number): ReadRecord[];
  /** Forgets what it kept (read again with the writer's pending records). */
  clear(): void;
  readonly size: number;
}

/**
 * The records a writer keeps back for its next batches: an event with a route (not one that
 * filtered it) that no attempt read is for yet, for up to `holdMs` after it was read, with
 * the attempts of that event read meanwhile. Its deliveries, a few milliseconds behind it in
 * the outbox, then go into its row (first-deliveries.ts) rather than into rows of their own.
 * At most `maxHeld` events; past that, an event is written at once and its deliveries later
 * as rows of attempts. Each record is looked at once when read, and each kept event once
 * when it goes: a batch costs what it holds, not what is kept.
 */
export function createKeptBack(holdMs: number, maxHeld: number): KeptBack {
  // In order of reading, so the oldest come first.
  const held = new Map<string, { readAt: number; awaiting: Set<string>; reads: ReadRecord[] }>();
  return {
    take(records, now) {
      const write: ReadRecord[] = [];
      const complete: string[] = [];
      for (const read of records) {
        const { record } = read;
        if (record.kind === "attempt") {
          const key = arrivalKeyOf(record);
          const kept = held.get(key);
          if (!kept) {
            write.push(read);
            continue;
          }
          kept.reads.push(read);
          if (kept.awaiting.delete(record.route) && kept.awaiting.size === 0) complete.push(key);
          continue;
        }
        const awaiting = new Set(record.routes);
        for (const route of record.filtered ?? []) awaiting.delete(route);
        const key = arrivalKeyOf(record);
        if (awaiting.size === 0 || holdMs <= 0 || held.size >= maxHeld || held.has(key)) write.push(read);
        else held.set(key, { readAt: read.readAt, awaiting, reads: [read] });
      }
      const release = (key: string) => {
        const kept = held.get(key);
        if (!kept) return;
        held.delete(key);
        write.push(...kept.reads);
      };
      complete.forEach(release);
      for (const [key, kept] of held) {
        if (now - kept.readAt < holdMs) break;
        release(key);
      }
      return write;
    },
    clear: () => held.clear(),
    get size() {
      return held.size;
    },
  };
}

import type { ReadRecord } from "./kept-back.js";

export interface EntryTally {
  /** Counts the records read of each entry. */
  read(records: ReadRecord[]): void;
  /** The entries whose every record read is now written: each once, to acknowledge. */
  written(records: ReadRecord[]): string[];
  /** Forgets every count (the writer reads its pending entries again). */
  clear(): void;
}

/**
 * When an outbox entry may go: an entry of several attempts (outboxAttemptsFields) can have
 * one kept back with its event (kept-back.ts) while the others are written, and stays
 * pending until the last is, so a crash in between archives it again, never loses it.
 */
export function createEntryTally(): EntryTally {
  const unwritten = new Map<string, number>();
  return {
    read(records) {
      for (const { id } of records) unwritten.set(id, (unwritten.get(id) ?? 0) + 1);
    },
    written(records) {
      const done = new Set<string>();
      for (const { id } of records) {
        const left = (unwritten.get(id) ?? 1) - 1;
        if (left > 0) unwritten.set(id, left);
        else {
          unwritten.delete(id);
          done.add(id);
        }
      }
      return [...done];
    },
    clear: () => unwritten.clear(),
  };
}

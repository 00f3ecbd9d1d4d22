import type { TenantEvent } from "./delivery-store.js";
import { jsonText } from "../events/json-text.js";

/** An event as the log holds it: the tenant's, without the stream a push adds. */
export type LogEvent = Omit<TenantEvent, "a0stream">;

/** One event of the tenant's log with its position. */
export interface LoggedEvent {
  seq: number;
  offset: string;
  /** ms since the epoch, from the event's `time` */
  at: number;
  type: string;
  /** The SSE `data:` line as sent: `{"offset","event"}`, or a broken text the control API put there. */
  data: string;
  /** A huge message: `data` is its start, then this many `x` of padding (Infinity: a line that never ends), then `tail`. */
  padding?: { bytes: number; tail: string };
}

export interface EventLog {
  /** Every emitted event goes here, whatever the streams do (docs/tenant.md#pulling-events). */
  append(event: LogEvent): void;
  /** A message whose data is `data` as given (a broken event, for tests of what a consumer does with one). */
  appendRaw(type: string, data: string): void;
  /** An event whose data carries `padBytes` of padding (Infinity: never ends), written as it is sent, never held. */
  appendPadded(event: LogEvent, padBytes: number): void;
  /** The events after `seq`, at most `limit`; those past retention are gone. */
  after(seq: number, limit: number): LoggedEvent[];
  /** The seq of the first event at or after `time` (ms), less one: where a `from_timestamp` read starts. */
  seqBefore(time: number): number;
  /** The seq of the last event appended (0: none yet). */
  head(): number;
  /** The seq an offset names; undefined when it is malformed. */
  seqOf(offset: string): number | undefined;
  /** False when the events after `seq` have partly expired (410). */
  stillHeld(seq: number): boolean;
  offsetOf(seq: number): string;
  /** Drops the events up to `seq` at once, as retention would (a test of an expired offset). */
  expireThrough(seq: number): void;
  /** Resolves on the next append, or when `signal` aborts. */
  nextAppend(signal: AbortSignal): Promise<void>;
}

/**
 * The tenant's event log as `GET /api/v2/events` serves it. Offsets are opaque
 * base64-looking strings (docs/tenant.md#pulling-events); here they wrap a sequence number. With a
 * retention, events older than it are dropped and an offset before them has expired.
 */
export function createEventLog(options: { retentionMs?: number; now?: () => number } = {}): EventLog {
  const now = options.now ?? Date.now;
  const entries: LoggedEvent[] = [];
  let head = 0;
  /** The seq of the last event dropped by retention. */
  let dropped = 0;
  let waiters: Array<() => void> = [];

  const offsetOf = (seq: number) => Buffer.from(`emu:${seq}`).toString("base64");
  const expire = () => {
    if (options.retentionMs === undefined) return;
    const cutoff = now() - options.retentionMs;
    let count = 0;
    while (count < entries.length && entries[count]!.at < cutoff) count++;
    if (count > 0) dropped = entries[count - 1]!.seq;
    entries.splice(0, count);
  };
  const add = (entry: LoggedEvent) => {
    head = entry.seq;
    entries.push(entry);
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };
  const indexAfter = (seq: number) => {
    // Sequences are dense from dropped + 1: the index of seq + 1.
    return Math.max(0, seq - dropped);
  };

  return {
    append(event) {
      const offset = offsetOf(head + 1);
      add({ seq: head + 1, offset, at: Date.parse(event.time) || now(), type: event.type, data: jsonText({ offset, event }) });
    },
    appendPadded(event, padBytes) {
      const offset = offsetOf(head + 1);
      const whole = jsonText({ offset, event: { ...event, data: { ...event.data, pad: "" } } });
      const at = whole.lastIndexOf('"pad":""') + '"pad":"'.length;
      add({ seq: head + 1, offset, at: now(), type: event.type, data: whole.slice(0, at), padding: { bytes: padBytes, tail: whole.slice(at) } });
    },
    appendRaw(type, data) {
      add({ seq: head + 1, offset: offsetOf(head + 1), at: now(), type, data });
    },
    after(seq, limit) {
      expire();
      const start = indexAfter(seq);
      return entries.slice(start, start + limit);
    },
    seqBefore(time) {
      expire();
      const first = entries.find((entry) => entry.at >= time);
      return first ? first.seq - 1 : head;
    },
    head: () => head,
    seqOf(offset) {
      const match = /^emu:(\d+)$/.exec(Buffer.from(offset, "base64").toString("utf8"));
      if (!match || Buffer.from(`emu:${match[1]}`).toString("base64") !== offset) return undefined;
      const seq = Number(match[1]);
      return seq <= head ? seq : undefined;
    },
    stillHeld(seq) {
      expire();
      return seq >= dropped;
    },
    offsetOf,
    expireThrough(seq) {
      const count = entries.findIndex((entry) => entry.seq > seq);
      const drop = count === -1 ? entries.length : count;
      if (drop > 0) dropped = entries[drop - 1]!.seq;
      entries.splice(0, drop);
    },
    nextAppend(signal) {
      return new Promise((resolve) => {
        if (signal.aborted) return resolve();
        const wake = () => {
          signal.removeEventListener("abort", wake);
          resolve();
        };
        waiters.push(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    },
  };
}

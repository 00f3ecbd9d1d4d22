import { Router, type Request, type Response } from "express";
import { isTenantEventType } from "../events/event-types.js";
import { ApiError } from "./api-error.js";
import { callerOf } from "./api-guard.js";
import type { RequestHandler } from "express";
import type { EventLog, LoggedEvent } from "./event-log.js";

export interface EventsApiOptions {
  /** `offset-only` markers this often while no event is due. */
  heartbeatMs: number;
  /** Each connection is closed after this long, as the tenant does every few minutes. */
  cycleMs: number;
  /** Open connections allowed at once (the tenant's plan: 1, 4 or 8); `429` beyond. */
  connections: number;
  /** The `retry:` each stream opens with: how long a consumer waits before reconnecting. */
  retryMs: number;
}

/** What the control API shows of the Events API, and its switch for an outage. */
export interface EventsApiState {
  /** Connections answered 200 and still open. */
  open: number;
  /** The most open at once since start. */
  maxOpen: number;
  /** Every request, by the status it got (0: dropped while down). */
  attempts: Record<string, number>;
  /** The last 200 requests: when each came (ms) and the status it got (0 until it ended: a stream open now, or one dropped). */
  recent: Array<{ at: number; status: number }>;
  /** While true, every request is dropped without an answer and open streams are cut. */
  down: boolean;
  /** The `Retry-After` (seconds) of a `429` past the connection limit. */
  retryAfterSeconds: number;
  /** Bytes of padding written for huge messages since start (how far a reader has read one that never ends). */
  paddingSent: number;
  /** False: a heartbeat is the `: heartbeat` comment alone, no `offset-only` marker (a quiet log shows only comments). */
  markers: boolean;
  /** Cuts every open stream (going down); with a message, each ends with `event: error` saying it. */
  cut(error?: string): void;
}

/** Ends one open stream; with a message, by `event: error` saying it. */
type Cutter = (error?: string) => void;

export function createEventsApiState(): EventsApiState {
  const cutters = new Set<Cutter>();
  const state: EventsApiState & { cutters: Set<Cutter> } = {
    open: 0,
    maxOpen: 0,
    attempts: {},
    recent: [],
    down: false,
    retryAfterSeconds: 1,
    paddingSent: 0,
    markers: true,
    cutters,
    cut: (error) => {
      for (const cut of [...cutters]) cut(error);
    },
  };
  return state;
}

/**
 * `GET /api/v2/events` as the tenant serves it (docs/tenant.md#pulling-events): a
 * Server-Sent Events stream of every emitted event from an offset (`from` or
 * `Last-Event-ID`, the header winning) or a time (`from_timestamp`), filtered by
 * `event_type` (repeated, or a comma list), with `offset-only` markers at the heartbeat,
 * a close every cycle, `410` for an expired offset and `429` past the connection limit.
 */
export function eventRoutes(log: EventLog, options: EventsApiOptions, state: EventsApiState): Router {
  const router = Router();
  const cutters = (state as EventsApiState & { cutters: Set<Cutter> }).cutters;

  router.get("/events", (req, res) => {
    if (!callerOf(res).scopes.includes("read:events")) throw new ApiError(403, "Insufficient scope; expected any of: read:events.", "insufficient_scope");
    serve(req, res);
  });

  function serve(req: Request, res: Response) {
    const start = startOf(req);
    const types = typesOf(req.query.event_type);
    if (state.open >= options.connections) {
      res.set("retry-after", String(state.retryAfterSeconds));
      throw new ApiError(429, `Too many concurrent connections to the events API (${options.connections} allowed on this plan).`, "too_many_requests");
    }
    state.open += 1;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    res.status(200).set({ "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
    res.write(`:connected\n\nretry: ${options.retryMs}\n\n`);

    const stop = new AbortController();
    let error: string | undefined;
    const cut = (message?: string) => {
      error ??= message;
      stop.abort();
    };
    cutters.add(cut);
    const cycle = setTimeout(cut, options.cycleMs);
    res.on("close", () => cut());
    void (async () => {
      let cursor = start;
      let lastSent = Date.now();
      while (!stop.signal.aborted) {
        const batch = log.after(cursor, 500);
        let wrote = true;
        for (const entry of batch) {
          cursor = entry.seq;
          if (types && !types.has(entry.type)) continue;
          if (entry.padding) wrote = await writePadded(res, entry, entry.padding, stop.signal, state);
          else wrote = res.write(`event: ${entry.type}\nid: ${entry.offset}\ndata: ${entry.data}\n\n`);
          lastSent = Date.now();
        }
        if (!wrote) await new Promise<void>((resolve) => (res.once("drain", resolve), stop.signal.addEventListener("abort", () => resolve(), { once: true })));
        if (batch.length > 0) continue;
        if (Date.now() - lastSent >= options.heartbeatMs) {
          // A comment, as the tenant sends between messages, then where the reader stands,
          // also past events the filter left out.
          res.write(": heartbeat\n\n");
          if (state.markers) res.write(`event: offset-only\nid: ${log.offsetOf(cursor)}\ndata: ${JSON.stringify({ offset: log.offsetOf(cursor) })}\n\n`);
          lastSent = Date.now();
        }
        const beat = AbortSignal.any([stop.signal, AbortSignal.timeout(Math.max(1, options.heartbeatMs - (Date.now() - lastSent)))]);
        await log.nextAppend(beat);
      }
      clearTimeout(cycle);
      cutters.delete(cut);
      state.open -= 1;
      // Terminal: the stream closes after it (docs/tenant.md#pulling-events).
      if (error !== undefined && !res.writableEnded) res.write(`event: error\ndata: ${JSON.stringify({ statusCode: 500, error: "Internal Server Error", message: error })}\n\n`);
      if (state.down) res.socket?.destroy();
      else res.end();
    })();
  }

  /** The seq to read after: `Last-Event-ID` or `from`, else `from_timestamp`, else now. */
  function startOf(req: Request): number {
    const header = req.get("last-event-id");
    const from = header ?? (typeof req.query.from === "string" ? req.query.from : undefined);
    const fromTimestamp = typeof req.query.from_timestamp === "string" ? req.query.from_timestamp : undefined;
    if (from !== undefined && fromTimestamp !== undefined && header === undefined) {
      throw new ApiError(400, "Query parameters from and from_timestamp cannot be used together.", "invalid_query_string");
    }
    if (from !== undefined) {
      const seq = log.seqOf(from);
      if (seq === undefined) throw new ApiError(400, `Invalid offset: ${from}`, "invalid_query_string");
      if (!log.stillHeld(seq)) throw new ApiError(410, "The offset has expired; resume with from_timestamp.", "offset_expired");
      return seq;
    }
    if (fromTimestamp !== undefined) {
      const time = Date.parse(fromTimestamp);
      if (Number.isNaN(time)) throw new ApiError(400, `Invalid from_timestamp: ${fromTimestamp}; expected ISO 8601.`, "invalid_query_string");
      return log.seqBefore(time);
    }
    return log.head();
  }

  return router;
}

/** A huge message, its padding written 64 KiB at a time as the reader takes it, until it ends or the stream is cut. */
async function writePadded(res: Response, entry: LoggedEvent, padding: { bytes: number; tail: string }, stop: AbortSignal, state: EventsApiState): Promise<boolean> {
  res.write(`event: ${entry.type}\nid: ${entry.offset}\ndata: ${entry.data}`);
  const chunk = Buffer.alloc(65_536, "x");
  for (let left = padding.bytes; left > 0 && !stop.aborted; left -= chunk.length) {
    const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
    state.paddingSent += part.length;
    if (!res.write(part)) await drained(res, stop);
  }
  return res.write(`${padding.tail}\n\n`);
}

/** Resolves once `res` takes more, or `stop` aborts; leaves no listener behind. */
function drained(res: Response, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      stop.removeEventListener("abort", done);
      resolve();
    };
    res.once("drain", done);
    stop.addEventListener("abort", done, { once: true });
  });
}

/**
 * In front of authentication: counts every request to the Events API by the status it got
 * (tests count connection attempts with it) and, while the API is down, drops each one.
 */
export function eventsGate(state: EventsApiState): RequestHandler {
  const count = (status: number) => (state.attempts[status] = (state.attempts[status] ?? 0) + 1);
  return (req, res, next) => {
    const request = { at: Date.now(), status: 0 };
    state.recent.push(request);
    if (state.recent.length > 200) state.recent.shift();
    if (state.down) {
      count(0);
      req.socket.destroy();
      return;
    }
    let counted = false;
    const once = () => {
      if (!counted) count((request.status = res.statusCode));
      counted = true;
    };
    // Counted when the answer ends: a refusal when it is sent, a stream when it closes.
    res.once("finish", once);
    res.once("close", once);
    next();
  };
}

/** `event_type`: one per parameter, repeated, or a comma list (both accepted, docs/tenant.md#pulling-events). */
function typesOf(value: unknown): Set<string> | undefined {
  if (value === undefined) return undefined;
  const list = (Array.isArray(value) ? value : [value]).flatMap((item) => String(item).split(",")).filter(Boolean);
  for (const type of list) if (!isTenantEventType(type)) throw new ApiError(400, `Unknown event type: ${type}`, "invalid_query_string");
  return list.length > 0 ? new Set(list) : undefined;
}

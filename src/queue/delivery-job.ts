import type { CloudEvent, Origin } from "../events/cloud-event.js";

/** The data of one delivery job: one event for the route that owns the queue. */
export interface DeliveryJobData {
  /** The event; without `data` where `eventJson` is set. */
  event: CloudEvent;
  /**
   * The whole event as JSON text, set only for an event nested too deep for
   * `JSON.stringify` (fan-out.ts): the dispatcher sends it as is.
   */
  eventJson?: string;
  origin: Origin;
  streamId?: string;
  /** ms since epoch when this service stored the event */
  receivedAt: number;
  /** a forced reconcile: deliver even where the route already has the event */
  force?: boolean;
  /**
   * The ledger held route deliveries but no arrival when this was stored (an earlier
   * store stopped between its add and its claim): the dispatcher reads the ledger before
   * a first run too.
   */
  recheck?: boolean;
  /** Set on a replay's job (archive/replay): sent with `X-Streamkeeper-Origin: replay`, its attempts archived under this replay. */
  replayId?: string;
  /** ms since epoch of the first failed attempt (since the last replay): the start of DISPATCH_RETRY_WINDOW_SECONDS */
  failingSince?: number;
}

/** The job's whole event: from `eventJson` for one too deep for `JSON.stringify` (JSON.parse takes any depth), else `event`. */
export function wholeEvent(data: DeliveryJobData): CloudEvent {
  return data.eventJson === undefined ? data.event : (JSON.parse(data.eventJson) as CloudEvent);
}

/*
 * The lanes of a route's queue (docs/operating.md, "Live and late lanes"). BullMQ serves a
 * queue's jobs without a priority first, then prioritized ones, the lower number first and
 * in the order they were added within one number (its moveToActive script: the wait list,
 * then ZPOPMIN of the prioritized set, scored priority × 2^32 + a counter).
 */
/** Late events (lane.ts) wait behind live ones, ahead of recoveries and replays. */
export const latePriority = 5;
/** Reconciled events wait behind live and late ones. */
export const reconcilePriority = 10;
/** A replay's deliveries wait behind live, late and reconciled events (a lower priority still). */
export const replayPriority = 20;

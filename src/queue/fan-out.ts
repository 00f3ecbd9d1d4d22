import type { CloudEvent, Origin } from "../events/cloud-event.js";
import { isStackOverflow, stringifyDeep } from "../events/stringify-deep.js";
import type { DeliveryJobData } from "./delivery-job.js";
import type { DeliveryQueues } from "./delivery-queues.js";
import type { Logger } from "../logging/logger.js";
import { eventsOwnJobId } from "../metrics/registry.js";
import { heldJobIds } from "./held-job-ids.js";
import { jobIdFor, replayJobIdFor } from "./job-id.js";
import { priorityOn } from "./lane.js";

export interface FanOutJob {
  origin: Origin;
  streamId?: string;
  /** ms since epoch when this service stored the event */
  receivedAt: number;
  /** a forced reconcile: its own job id, and delivered where a route already has the event */
  force?: boolean;
  /** the ledger held route deliveries but no arrival (delivery-job.ts) */
  recheck?: boolean;
}

/** Adds one delivery job per route; resolves once every job is in Redis. */
export type FanOut = (event: CloudEvent, routes: string[], job: FanOutJob) => Promise<void>;

/**
 * One job per route, each in the route's own queue, under an id derived from the event
 * id: BullMQ ignores a second add with the same id, so a store retried after a Redis
 * fault adds nothing twice. Late and reconciled events wait behind live ones (lane.ts).
 * An event too deep for BullMQ's `JSON.stringify` (nesting in the thousands, which
 * `JSON.parse` accepts) is added as its JSON text instead (`eventJson`, delivery-job.ts):
 * nothing is written before BullMQ serialises, so the second add is the only one.
 *
 * Where a finished job of an earlier arrival holds that id (held-job-ids.ts), the job gets
 * an id of its own (as a forced store's) and the old job stays: a dead letter is still
 * there to inspect and replay. That id is new on each try of a store, so the job carries
 * `recheck`: should a store stopped before its claim be retried, the second job reads the
 * ledger before its first run and sends nothing the first delivered. Counted
 * (`events_own_job_id_total`) and logged once the jobs are added.
 */
export function createFanOut(queues: DeliveryQueues, logger?: Logger): FanOut {
  return async (event, routes, job) => {
    const { jobId, data } = deliveryJobFor(event, job);
    // A forced store's id is its own already.
    const held = job.force ? [] : await heldJobIds(queues, routes, jobId);
    const ownJobId = replayJobIdFor(event.id, job.receivedAt);
    await addDeep(data, (jobData) =>
      Promise.all(
        routes.map((route, index) => {
          const priority = priorityOnRoute(queues, route, event, job);
          if (!held[index]) return queues.forRoute(route).add(event.type, jobData, { jobId, priority });
          return queues.forRoute(route).add(event.type, { ...jobData, recheck: true }, { jobId: ownJobId, priority });
        }),
      ),
    );
    routes.forEach((route, index) => {
      const old = held[index];
      if (!old) return;
      eventsOwnJobId.inc({ route, old });
      logger?.info(
        { eventId: event.id, route, jobId: ownJobId, heldBy: jobId, old },
        `event id seen again after DEDUPE_TTL_SECONDS while the job of its earlier arrival (${old === "dead_letter" ? "a dead letter" : "delivered"}) keeps its job id on this route: queued under a job id of its own; the old job stays`,
      );
    });
  };
}

/** Adds a delivery job's data, or when BullMQ cannot serialise it for its depth, the deep form of it (`deepEventData`). */
export async function addDeep<T>(data: DeliveryJobData, add: (data: DeliveryJobData) => Promise<T>): Promise<T> {
  try {
    return await add(data);
  } catch (error) {
    if (!isStackOverflow(error)) throw error;
    return add(deepEventData(data));
  }
}

/** An event's priority on one route: its lane there, by the route's live window (lane.ts). */
export function priorityOnRoute(queues: DeliveryQueues, route: string, event: CloudEvent, job: FanOutJob): number | undefined {
  return priorityOn(queues.liveWindowMs(route), event, job);
}

/** The job id and data of an event's delivery jobs (one per route, the same for each; the priority is per route: priorityOnRoute). */
export function deliveryJobFor(event: CloudEvent, { origin, streamId, receivedAt, force = false, recheck = false }: FanOutJob) {
  const jobId = force ? replayJobIdFor(event.id, receivedAt) : jobIdFor(event.id);
  const data: DeliveryJobData = { event, origin, streamId, receivedAt, force: force || undefined, recheck: recheck || undefined };
  return { jobId, data };
}

/** The job data of an event too deep for BullMQ's `JSON.stringify`: its envelope, and the whole as its JSON text. */
export function deepEventData(data: DeliveryJobData): DeliveryJobData {
  return { ...data, event: envelopeOf(data.event), eventJson: stringifyDeep(data.event) };
}

/** The event without its payload, for what reads the envelope only (dead letters, GET /admin/events). */
function envelopeOf(event: CloudEvent): CloudEvent {
  const { data: _data, data_base64: _base64, ...envelope } = event;
  return envelope;
}

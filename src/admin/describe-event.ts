import type { Job } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { Origin } from "../events/cloud-event.js";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { DeliveryResult } from "../dispatch/create-delivery-processor.js";
import type { DeliveryQueue, DeliveryQueues } from "../queue/delivery-queues.js";
import type { EventLedger } from "../queue/event-ledger.js";
import { jobIdFor, replayJobIdFor } from "../queue/job-id.js";
import { deliveryQueueName } from "../queue/queue-names.js";
import { jobUnderLegacyId } from "../upgrade/legacy-job-id.js";

export type DeliveryState = "waiting" | "delayed" | "active" | "delivered" | "stale" | "filtered" | "dead_letter" | "retrying" | "unknown";

export interface RouteDelivery {
  route: string;
  state: DeliveryState;
  /** attempts made so far (failed ones, plus the successful one once delivered) */
  attempts: number;
  lastError?: string;
  /** ISO 8601 time of the route's 2xx */
  deliveredAt?: string;
}

export interface EventDescription {
  eventId: string;
  type: string;
  arrival: {
    receivedAt: string;
    origin: Origin;
    streamId?: string;
    /** copies of the id answered as duplicates */
    duplicates: number;
    lastDuplicateAt?: string;
    /** forced reconciles that queued it again */
    replays: number;
  };
  /** true when no route matched the event's type: it was stored and is delivered nowhere (a route's filter leaving it out is `filtered` there instead) */
  unrouted: boolean;
  routes: RouteDelivery[];
}

/**
 * What this service knows of one event, for `GET /admin/events/:eventId` (README.md#http-surfaces
 * "Admin surface"): its arrival from the ledger and, per route it matched, the state of
 * that route's job. Undefined when the id is unknown (never seen, or older than
 * DEDUPE_TTL_SECONDS). The job of a forced replay has its own id and is not looked up;
 * its success still shows in `deliveredAt`.
 */
/**
 * The arrival's job in a route's queue: under its job id, else under the id it had before
 * raw and derived job ids were kept apart (job-id.ts), if that job holds this very event.
 * A job there from an earlier arrival (older than the TTL: a dead letter, a delivered job
 * still kept) is not this arrival's, which has an id of its own (fan-out.ts).
 */
async function jobOf(queue: DeliveryQueue, eventId: string, receivedAt: number): Promise<Job<DeliveryJobData> | undefined> {
  const job = (await queue.getJob(jobIdFor(eventId))) ?? (await jobUnderLegacyId(queue, eventId));
  if (job && job.data.receivedAt < receivedAt) return (await queue.getJob(replayJobIdFor(eventId, receivedAt))) ?? undefined;
  return job;
}

export async function describeEvent(
  eventId: string,
  deps: { ledger: EventLedger; queues: DeliveryQueues },
): Promise<EventDescription | undefined> {
  const record = await deps.ledger.get(eventId);
  if (!record) return undefined;
  const routes = await Promise.all(
    record.routes.map(async (route): Promise<RouteDelivery> => {
      const delivered = record.deliveredAt[route];
      const deliveredAt = delivered === undefined ? undefined : new Date(delivered).toISOString();
      const queue = deps.queues.all().find((candidate) => candidate.name === deliveryQueueName(route));
      let job = queue && (await jobOf(queue, eventId, record.receivedAt));
      if (!queue || !job) return { route, state: deliveredAt ? "delivered" : record.staleAt[route] !== undefined ? "stale" : "unknown", attempts: 0, deliveredAt };
      const state = await jobState(deps.queues.connection, queue, job.id!);
      // Finished between the two reads: the job as it finished (its attempt counted).
      if ((state === "completed" || state === "failed") && job.finishedOn === undefined) job = (await queue.getJob(job.id!)) ?? job;
      // attemptsMade, plus the one in flight: attemptsStarted also counts each time an
      // open circuit handed the job back unsent (route-circuit.ts).
      const attempts = job.attemptsMade + (state === "active" ? 1 : 0);
      return { route, state: stateOf(job, state), attempts, lastError: job.failedReason || undefined, deliveredAt };
    }),
  );
  // A route's filter left it out: no job was ever added there (routes/route-chooser.ts).
  const filtered = record.filtered.map((route): RouteDelivery => ({ route, state: "filtered", attempts: 0 }));
  return {
    eventId,
    type: record.type,
    arrival: {
      receivedAt: new Date(record.receivedAt).toISOString(),
      origin: record.origin,
      streamId: record.streamId,
      duplicates: record.duplicates,
      lastDuplicateAt: record.lastDuplicateAt === undefined ? undefined : new Date(record.lastDuplicateAt).toISOString(),
      replays: record.replays,
    },
    unrouted: record.routes.length === 0 && filtered.length === 0,
    routes: [...routes, ...filtered],
  };
}

/**
 * The job's state from its sorted sets and its lock, a handful of O(log n) lookups in one
 * round trip. BullMQ's getState scans the wait and active lists (LPOS, or LRANGE before
 * Redis 6.0.6): a day's backlog behind a down route would make each admin call block Redis.
 */
async function jobState(connection: Redis | Cluster, queue: DeliveryQueue, jobId: string): Promise<string> {
  const replies = (await connection
    .pipeline([
      ["zscore", queue.keys.completed!, jobId],
      ["zscore", queue.keys.failed!, jobId],
      ["zscore", queue.keys.delayed!, jobId],
      ["zscore", queue.keys.prioritized!, jobId],
      ["exists", `${queue.toKey(jobId)}:lock`],
    ])
    .exec()) ?? [];
  const [completed, failed, delayed, prioritized, locked] = replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
  if (completed !== null) return "completed";
  if (failed !== null) return "failed";
  if (delayed !== null) return "delayed";
  if (prioritized !== null) return "prioritized";
  return Number(locked) === 1 ? "active" : "waiting";
}

function stateOf(job: Job<DeliveryJobData>, state: string): DeliveryState {
  const retried = job.attemptsMade > 0;
  switch (state) {
    case "completed":
      // A dropStale route skipped it: completed, yet never sent.
      return (job.returnvalue as DeliveryResult | null)?.status === "stale" ? "stale" : "delivered";
    case "failed":
      return "dead_letter";
    case "active":
      return "active";
    case "delayed":
      return retried ? "retrying" : "delayed";
    case "waiting":
    case "prioritized":
    case "waiting-children":
      return retried ? "retrying" : "waiting";
    default:
      return "unknown";
  }
}

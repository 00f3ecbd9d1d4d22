import { Queue, type Job , type Telemetry } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { reconcileQueueBullPrefix, reconcileQueueName } from "../queue/queue-names.js";
import { reconcileAttempts, reconcileBackoffType } from "./reconcile-backoff.js";
import type { ReconcileJobData, ReconcileOutcome, ReconcileResult } from "./reconcile-job.js";

export type ReconcileQueueHandle = Queue<ReconcileJobData, ReconcileResult>;
export type ReconcileJob = Job<ReconcileJobData, ReconcileResult>;

export interface EnqueuedJob {
  eventId: string;
  jobId: string;
}

export interface JobOutcome {
  /** BullMQ's state: waiting, prioritized, delayed, active, completed, failed. */
  state: string;
  /** Undefined until the job is done. */
  result?: ReconcileResult;
  /** A job not done whose attempts failed so far (the tenant down): how many, and the last one's reason. */
  retrying?: { attempts: number; reason: string };
}

export interface ReconcileQueue {
  queue: ReconcileQueueHandle;
  enqueue(eventIds: string[], options?: { streamId?: string; force?: boolean }): Promise<EnqueuedJob[]>;
  /** The state and, once done, the result of a job; undefined for an unknown (or expired) job id. */
  outcomeOf(jobId: string): Promise<JobOutcome | undefined>;
  close(): Promise<void>;
}

/** How long finished jobs stay readable (`GET /admin/reconcile/:jobId`, a CLI waiting after a restart). */
const keepSeconds = 7 * 24 * 3600;

/**
 * The producer side of the durable `reconcile` queue, on a connection the caller owns.
 * A job that throws (the tenant down, Redis down while storing) is retried with backoff
 * for RECONCILE_RETRY_FOR_SECONDS; other tenant API errors are outcomes, not failures. Job
 * ids are BullMQ's own, so reconciling an id twice makes two jobs: the second reports
 * `already_received`.
 */
export function createReconcileQueue(connection: Redis | Cluster, queuePrefix: string, telemetry?: Telemetry): ReconcileQueue {
  const queue: ReconcileQueueHandle = new Queue<ReconcileJobData, ReconcileResult>(reconcileQueueName, {
    connection,
    prefix: reconcileQueueBullPrefix(queuePrefix),
    skipWaitingForReady: true,
    telemetry,
    defaultJobOptions: {
      // Retried for RECONCILE_RETRY_FOR_SECONDS, by the worker's backoff (reconcile-backoff.ts).
      attempts: reconcileAttempts,
      backoff: { type: reconcileBackoffType, delay: 1000 },
      removeOnComplete: { age: keepSeconds },
      removeOnFail: { age: keepSeconds },
    },
  });
  return {
    queue,
    async enqueue(eventIds, { streamId, force = false } = {}) {
      const enqueued: EnqueuedJob[] = [];
      // addBulk is one pipeline per call (not atomic, docs/libraries.md#bullmq-job-ids): chunks keep each one small.
      for (let at = 0; at < eventIds.length; at += 500) {
        const chunk = eventIds.slice(at, at + 500);
        const jobs = await queue.addBulk(chunk.map((eventId) => ({ name: "reconcile", data: { eventId, streamId, force } })));
        jobs.forEach((job, index) => enqueued.push({ eventId: chunk[index]!, jobId: job.id! }));
      }
      return enqueued;
    },
    async outcomeOf(jobId) {
      // State first, then the job: read the other way round, a job that finishes in
      // between shows "completed" without its return value.
      const state = await queue.getJobState(jobId);
      const job = await queue.getJob(jobId);
      if (!job || state === "unknown") return undefined;
      const result = resultOf(job, state);
      const retrying = !result && job.attemptsMade > 0 ? { attempts: job.attemptsMade, reason: job.failedReason } : undefined;
      return { state, result, ...(retrying && { retrying }) };
    },
    close: () => queue.close(),
  };
}

/** The result of a finished job: its return value, or for a job that failed for good an `error:` outcome. */
export function resultOf(job: ReconcileJob, state: string): ReconcileResult | undefined {
  if (state === "completed") return job.returnvalue;
  if (state !== "failed") return undefined;
  const seconds = Math.round(((job.finishedOn ?? Date.now()) - job.timestamp) / 1000);
  const outcome: ReconcileOutcome = `error: the reconcile job failed after ${job.attemptsMade} attempts over ${seconds} s (${job.failedReason}); reconcile this id again once that is fixed (RECONCILE_RETRY_FOR_SECONDS says how long a job is retried)`;
  return { eventId: job.data.eventId, streamId: job.data.streamId, outcome };
}

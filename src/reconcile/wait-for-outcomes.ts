import type { QueueEvents } from "bullmq";
import { resultOf, type EnqueuedJob, type ReconcileQueueHandle } from "./create-reconcile-queue.js";
import type { ReconcileResult } from "./reconcile-job.js";

export interface WaitForOutcomesOptions {
  queue: ReconcileQueueHandle;
  /** Running (waitUntilReady) before the jobs were added, so no completion slips past. */
  events: QueueEvents;
  jobs: EnqueuedJob[];
  /** Called once per job, in the order the jobs finish. */
  onResult(result: ReconcileResult, job: EnqueuedJob): void;
  /** How often the oldest unfinished jobs are read directly, in case an event was missed. @defaultValue 1000 */
  sweepMs?: number;
}

/** Jobs read per sweep: the oldest unfinished ones, which a FIFO queue finishes first. */
const sweepSize = 200;

/**
 * Resolves once every job has its outcome. Completions come from QueueEvents (prompt,
 * one stream read for all jobs); a bounded sweep of the oldest unfinished jobs catches
 * any completion the event stream dropped (it is capped) or that came before it was read.
 */
export function waitForOutcomes(options: WaitForOutcomesOptions): Promise<void> {
  const { queue, events, onResult } = options;
  const pending = new Map(options.jobs.map((job) => [job.jobId, job]));
  if (pending.size === 0) return Promise.resolve();

  return new Promise<void>((resolve, reject) => {
    let sweeping = false;
    let done = false;
    const settle = (jobId: string, result: ReconcileResult) => {
      const job = pending.get(jobId);
      if (!job || done) return;
      pending.delete(jobId);
      onResult(result, job);
      if (pending.size === 0) finish();
    };
    const read = async (jobId: string) => {
      const job = await queue.getJob(jobId);
      if (!job) {
        const eventId = pending.get(jobId)?.eventId ?? "";
        return settle(jobId, { eventId, outcome: `error: job ${jobId} is no longer in the reconcile queue (removed?); reconcile this id again` });
      }
      const result = resultOf(job, await job.getState());
      if (result) settle(jobId, result);
    };
    const onCompleted = ({ jobId, returnvalue }: { jobId: string; returnvalue: unknown }) => settle(jobId, returnvalue as ReconcileResult);
    // `failed` events are final failures; read the job for its reason and attempts.
    const onFailed = ({ jobId }: { jobId: string }) => {
      if (pending.has(jobId)) read(jobId).catch(fail);
    };
    const sweep = async () => {
      if (sweeping) return;
      sweeping = true;
      try {
        await Promise.all([...pending.keys()].slice(0, sweepSize).map(read));
      } finally {
        sweeping = false;
      }
    };
    const timer = setInterval(() => sweep().catch(fail), options.sweepMs ?? 1000);
    events.on("completed", onCompleted);
    events.on("failed", onFailed);
    function stop() {
      done = true;
      clearInterval(timer);
      events.off("completed", onCompleted);
      events.off("failed", onFailed);
    }
    function finish() {
      stop();
      resolve();
    }
    function fail(error: unknown) {
      if (done) return;
      stop();
      reject(error);
    }
    sweep().catch(fail);
  });
}

import { createRedisBackend, raw2NextJobData, type BackendFactory, type MinimalJob, type RedisQueueBackend } from "bullmq";
import type { Logger } from "../logging/logger.js";
import { createRepeatLog } from "../logging/repeat-log.js";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { EventLedger } from "../queue/event-ledger.js";
import type { DeliveryResult } from "./create-delivery-processor.js";

/**
 * The BullMQ backend of one route's worker, whose completion of a delivered job records the
 * delivery in the ledger (the mark that keeps a later run of the job from sending it again):
 * BullMQ's moveToFinished, with the arguments BullMQ built, and the mark in one script call
 * (finish-script.ts), so the mark costs no call of its own and a crash never leaves a
 * completed job without it. Every other move (a retry, a failure, a job that was not sent)
 * is BullMQ's own. Where one script cannot reach both the ledger and the queue (a cluster),
 * the mark goes apart (`markDelivered`) and BullMQ completes the job as usual.
 */
export function markAtCompletion(ledger: EventLedger, route: string, logger: Logger): BackendFactory<RedisQueueBackend> {
  // Once a minute with its count: a Redis fault fails every completion of that moment.
  const finishFailed = createRepeatLog(logger, "warn", "could not complete a delivered job with its mark in one call; completing it the usual way, its mark apart", 60_000);
  return (name, opts, flags) => {
    const backend = createRedisBackend(name, opts, flags);
    const complete = backend.moveToCompleted.bind(backend);
    backend.moveToCompleted = async (job, returnValue, removeOnComplete, token, fetchNext) => {
      const delivered = returnValue as DeliveryResult | undefined;
      if (delivered?.status !== "delivered") return complete(job, returnValue, removeOnComplete, token, fetchNext);
      const eventId = (job.data as DeliveryJobData).event.id;
      const unmarked = (error: unknown) => logger.warn({ route, eventId, jobId: job.id, err: error }, "delivered, but recording the delivery failed; a re-run of this job would send it again");
      const args = backend.moveToCompletedArgs(job as MinimalJob<unknown, string>, JSON.stringify(returnValue), removeOnComplete, token, fetchNext);
      const keyCount = backend.moveToFinishedKeys.length;
      // moveToFinished's last argument, the fields a failure updates, is unset for a completion.
      const scriptArgs = (args.at(-1) === undefined ? args.slice(keyCount, -1) : args.slice(keyCount)) as Array<string | number | Buffer>;
      let finished: Awaited<ReturnType<EventLedger["finishDelivered"]>>;
      try {
        finished = await ledger.finishDelivered(eventId, route, delivered.at, { keys: args.slice(0, keyCount) as string[], args: scriptArgs });
      } catch (error) {
        // The ledger's connection or its script failed: the delivery stands, its mark is
        // tried apart (said if that fails too), and BullMQ completes the job on its own
        // connection. Had the script run and only its answer been lost, BullMQ finds the
        // job no longer active, as after any completion whose answer was lost.
        finishFailed({ route, err: error });
        finished = "unsupported";
      }
      if (finished === "unsupported") {
        ledger.markDelivered(eventId, route, delivered.at).catch(unmarked);
        return complete(job, returnValue, removeOnComplete, token, fetchNext);
      }
      // What BullMQ's own moveToFinished makes of the script's reply (redis-queue-backend.js).
      const { moved } = finished;
      if (typeof moved === "number" && moved < 0) throw backend.finishedErrors({ code: moved, jobId: job.id, command: "moveToFinished", state: "active" });
      return { result: raw2NextJobData(moved as unknown[]), finishedOn: args[keyCount + 1] as number };
    };
    return backend;
  };
}

import type { EventRecord as ArchiveEventRecord } from "../archive/archive-record.js";
import type { CloudEvent } from "../events/cloud-event.js";
import type { Logger } from "../logging/logger.js";
import { isStackOverflow } from "../events/stringify-deep.js";
import { captureJobAdd, type CapturedJobAdd } from "./capture-job-add.js";
import type { DeliveryQueues } from "./delivery-queues.js";
import type { Admission, EventLedger } from "./event-ledger.js";
import { deepEventData, deliveryJobFor, priorityOnRoute, type FanOutJob } from "./fan-out.js";

/**
 * A new id's store in one round trip (docs/architecture.md, "Admission"): the ledger's
 * check, one job per route and the ledger's claim, plus the archive's outbox entry when
 * `record` is given, in one script that Redis runs whole or not at all. What else can
 * happen is the event store's (event-store.ts): `recheck` and `unsupported` write nothing.
 */
export type Admit = (event: CloudEvent, routes: string[], job: Omit<FanOutJob, "force" | "recheck">, record?: ArchiveEventRecord) => Promise<Admission>;

export interface AdmissionDeps {
  ledger: EventLedger;
  queues: DeliveryQueues;
  /** The archive outbox's stream (archive/archive-outbox.ts `archiveOutboxKey`) and an event record's fields there (`outboxFields`), when the archive is on. */
  outbox?: { key: string; fieldsOf(record: ArchiveEventRecord): string[] };
  /** Told once when the installed BullMQ's add cannot be run inside the admission. */
  logger?: Logger;
}

export function createAdmission({ ledger, queues, outbox, logger }: AdmissionDeps): Admit {
  // A cluster, or an endpoint that answered CROSSSLOT once: the long way from then on,
  // without building jobs for nothing first.
  let unsupported = "isCluster" in queues.connection && queues.connection.isCluster;
  let toldLongWay = false;
  return async (event, routes, job, record) => {
    if (unsupported) return "unsupported";
    const { jobId, data } = deliveryJobFor(event, job);
    const capture = (jobData: typeof data) => routes.map((route) => captureJobAdd(queues.forRoute(route), event.type, jobData, { jobId, priority: priorityOnRoute(queues, route, event, job) }));
    let adds: Array<CapturedJobAdd | undefined>;
    try {
      adds = capture(data);
    } catch (error) {
      // As fan-out.ts: an event nested deeper than JSON.stringify goes as its JSON text.
      if (!isStackOverflow(error)) throw error;
      adds = capture(deepEventData(data));
    }
    const jobs = adds.filter((add) => add !== undefined);
    if (jobs.length < adds.length) {
      for (const add of jobs) add.settle(new Error("not added: stored the long way"));
      if (jobs.length === 0 && !toldLongWay) {
        // Correct still (the long way keeps every guarantee), but slower: say it, once.
        toldLongWay = true;
        logger?.warn("admission: the installed BullMQ builds its jobs in a way the one-round-trip admission does not know; new events are stored the long way (three round trips each); see docs/architecture.md, \"Admission\"");
      }
      return "unsupported";
    }
    const entry = outbox && record ? { key: outbox.key, fields: outbox.fieldsOf(record) } : undefined;
    try {
      const admission = await ledger.admit(event.id, { receivedAt: job.receivedAt, origin: job.origin, streamId: job.streamId, type: event.type, routes }, jobs, entry);
      if (admission === "unsupported") unsupported = true;
      const added = admission === "stored" || admission === "duplicate";
      for (const add of jobs) add.settle(added ? undefined : new Error(`not added: ${admission}`));
      return admission;
    } catch (error) {
      for (const add of jobs) add.settle(error as Error);
      throw error;
    }
  };
}

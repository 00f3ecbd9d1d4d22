import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { archiveOutboxKey, createArchiveOutbox } from "../archive/archive-outbox.js";
import { outboxFields } from "../archive/archive-record.js";
import type { RunningArchive } from "../archive/start-archive.js";
import { createPullState, type PullState } from "../pull/pull-state.js";
import { createAdmission } from "../queue/admission.js";
import { countStoredEvents } from "../queue/count-stored-events.js";
import { createRedisErrorLog } from "../redis/redis-error-log.js";
import { createDeliveryQueues, type DeliveryQueues } from "../queue/delivery-queues.js";
import { createEventLedger, deliveryMarkGatherMs, type EventLedger } from "../queue/event-ledger.js";
import { createEventStore, type EventStore } from "../queue/event-store.js";
import { createFanOut } from "../queue/fan-out.js";
import { createReconcileQueue, type ReconcileQueue } from "../reconcile/create-reconcile-queue.js";
import { routesMatching, type Route } from "../routes/route.js";
import { createRouteChooser } from "../routes/route-chooser.js";
import { createFilteredRecorder } from "../queue/record-filtered.js";
import { createSweepState, type SweepState } from "../sweep/create-sweep-state.js";
import type { Tracing } from "../telemetry/start-tracing.js";
import { closeInOrder } from "./close-in-order.js";
import type { Connections } from "./create-connections.js";

/** What the parts keep in Redis, each made once. */
export interface Stores {
  /** Admission, dedupe and what is known of an event; on the fail-fast client, so a store fails at once while Redis is away. */
  ledger: EventLedger;
  /** A worker role's: the same ledger on the connection that waits out a slow Redis, where deliveries are recorded (a 2xx left unrecorded would be sent again). */
  deliveryLedger?: EventLedger;
  queues: DeliveryQueues;
  reconcileQueue: ReconcileQueue;
  /** The ledger and the fan-out in order, counted (events_received_total). */
  store: EventStore;
  /** Checkpoints written on the waiting connection; the lease and reads on the fail-fast one. */
  sweepState: SweepState;
  pullState: PullState;
  close(): Promise<void>;
}

export async function createStores(deps: { config: Config; logger: Logger; routes: Route[]; connections: Connections; archive?: RunningArchive; tracing: Tracing }): Promise<Stores> {
  const { config, logger, routes, connections, archive, tracing } = deps;
  const { env } = config;
  const { client } = connections;
  const ledger = createEventLedger(client, env.QUEUE_PREFIX, env.DEDUPE_TTL_SECONDS, env.LEDGER_SHARDS);
  if (connections.reachable) await warnOnOtherShards(ledger, env.LEDGER_SHARDS, logger);
  const queues = createDeliveryQueues(client, env.QUEUE_PREFIX, routes, { ageSeconds: env.COMPLETED_JOB_RETENTION_SECONDS, count: env.COMPLETED_JOB_RETENTION_COUNT }, tracing.bullmq);
  // Off the acknowledgement path: the outbox is in Redis, Postgres is read by its writer alone (docs/architecture.md).
  const outbox = archive && createArchiveOutbox(client, env.QUEUE_PREFIX);
  // A new id is stored in one round trip (admission.ts), the archive's outbox entry with it.
  const admit = createAdmission({ ledger, queues, outbox: archive ? { key: archiveOutboxKey(env.QUEUE_PREFIX), fieldsOf: outboxFields } : undefined, logger });
  const store = countStoredEvents(
    createEventStore({ ledger, fanOut: createFanOut(queues, logger), routesFor: routesMatching(routes), narrow: createRouteChooser(routes).narrow, onFiltered: createFilteredRecorder(ledger, logger), archive: outbox && ((record) => outbox([record])), admit }),
  );
  const reconcileQueue = createReconcileQueue(client, env.QUEUE_PREFIX, tracing.bullmq);
  const logQueueError = createRedisErrorLog(logger, "queue: Redis error", env.LOG_REPEAT_INTERVAL_SECONDS * 1000);
  for (const queue of [...queues.all(), reconcileQueue.queue]) {
    // Without a listener a Redis outage prints raw stack traces; the ingress answers 503 meanwhile.
    queue.on("error", (error) => logQueueError({ err: error, queue: queue.name }, queue.name));
  }
  const records = connections.worker?.records;
  return {
    ledger,
    deliveryLedger: records && createEventLedger(records, env.QUEUE_PREFIX, env.DEDUPE_TTL_SECONDS, env.LEDGER_SHARDS, { gatherMarksMs: deliveryMarkGatherMs }),
    queues,
    reconcileQueue,
    store,
    sweepState: createSweepState(connections.waiting, env.QUEUE_PREFIX, { failFast: client }),
    pullState: createPullState(client, env.QUEUE_PREFIX),
    close: () => closeInOrder([() => queues.close(), () => reconcileQueue.close()]),
  };
}

async function warnOnOtherShards(ledger: EventLedger, configured: number, logger: Logger) {
  const shards = await ledger.shards().catch(() => configured);
  if (shards !== configured) {
    logger.warn({ ledgerShards: shards }, `LEDGER_SHARDS=${configured} is not used: this Redis's ledger has ${shards} shards, fixed when it was first written; set LEDGER_SHARDS=${shards}, or see docs/deploy.md (Sizing the ledger) to change it`);
  }
}

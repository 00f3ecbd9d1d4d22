import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { createPacedTenant, type PacedTenant } from "../pace/create-paced-tenant.js";
import { createReconcileWorker, reconcileTenantOf, type ReconcileWorkerOptions } from "../reconcile/create-reconcile-worker.js";
import { createReconciler } from "../reconcile/create-reconciler.js";
import { createWindowRunner, type WindowRunner } from "../sweep/create-window-runner.js";
import type { Tracing } from "../telemetry/start-tracing.js";
import type { Role } from "./role.js";
import type { Connections } from "./create-connections.js";
import type { Stores } from "./create-stores.js";
import { startFinders } from "./start-finders.js";

export interface Recovery {
  /** The process's one paced tenant client (pace/create-paced-tenant.ts), or why there is none. */
  tenant: PacedTenant;
  /** One window of the tenant's failed deliveries, recovered in this process (`reconcile --since`, POST /admin/sweep/window). */
  runWindow: WindowRunner;
  /** A worker role's: another reconcile worker with the same processor, on other queues (upgrade/ drains an earlier layout with it). */
  reconcileWorkerFor?(logger: Logger, options: Pick<ReconcileWorkerOptions, "drainPrefix">): { close(): Promise<void>; hurry(): void };
  /** Stops every worker and finder; a job cut short is taken up again (reconciling is idempotent). */
  close(): Promise<void>;
  /** During close(): the reconcile worker stops waiting for jobs in flight (a second signal). */
  hurry(): void;
}

/**
 * Recovering what the tenant failed to deliver: the paced tenant client every caller
 * shares, and in a worker role the reconcile worker (jobs by id) and the finders that
 * look by themselves (sweep, stream watch, pull). `beforeSweep` runs before the first
 * sweep (upgrade/ moves an earlier release's checkpoints then).
 */
export async function createRecovery(deps: {
  config: Config;
  logger: Logger;
  role: Role;
  connections: Connections;
  stores: Stores;
  ready(): Promise<boolean>;
  tracing: Tracing;
  serviceName: string;
  beforeSweep(): Promise<void>;
}): Promise<Recovery> {
  const { config, logger, connections, stores } = deps;
  const { env } = config;
  // One paced tenant client per process, shared by everything that calls the tenant by
  // itself; its pace lives in Redis, on a connection that waits out an outage.
  const tenant = createPacedTenant({ config, redis: connections.waiting, logger });
  // Recovers from the tenant's failed-deliveries list (sweep, `reconcile --since`) in this
  // process; reconcile jobs by id run in the reconcile worker's own.
  const listReconciler = createReconciler({ ledger: stores.ledger, store: stores.store, tenant: reconcileTenantOf(tenant), defaultStreamId: env.DEFAULT_STREAM_ID });
  const runWindow = createWindowRunner({ env, tenant, reconciler: listReconciler });
  if (!connections.worker) return { tenant, runWindow, close: async () => {}, hurry: () => {} };

  const workerOptions = { env, tenant, connection: connections.worker.reconcile, ledger: stores.ledger, store: stores.store, telemetry: deps.tracing.bullmq, serviceName: deps.serviceName };
  const worker = createReconcileWorker({ ...workerOptions, logger });
  await deps.beforeSweep();
  const finders = startFinders({ config, logger, tenant, reconciler: listReconciler, client: connections.client, stores, ready: deps.ready });
  return {
    tenant,
    runWindow,
    reconcileWorkerFor: (other, options) => createReconcileWorker({ ...workerOptions, ...options, logger: other }),
    close: async () => void (await Promise.all([worker.close(), finders.close()])),
    hurry: () => worker.hurry(),
  };
}

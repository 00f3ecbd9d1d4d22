import type { Config } from "./config/config.js";
import type { Logger } from "./logging/logger.js";
import { startArchive } from "./archive/start-archive.js";
import { reportRotation } from "./credentials/report-rotation.js";
import { resolveSecrets } from "./credentials/resolve-secrets.js";
import { reportWhatIsOff } from "./service-config/report-what-is-off.js";
import { describeServiceConfig, serviceLabel } from "./service-config/service-config.js";
import { bindPorts } from "./service/bind-ports.js";
import { closeInOrder } from "./service/close-in-order.js";
import { createAdmin } from "./service/create-admin.js";
import { createConnections } from "./service/create-connections.js";
import { createDelivery } from "./service/create-delivery.js";
import { createIngress } from "./service/create-ingress.js";
import { createReadiness } from "./service/create-readiness.js";
import { createRecovery } from "./service/create-recovery.js";
import { createStores } from "./service/create-stores.js";
import { loadServiceRoutes } from "./service/load-service-routes.js";
import type { Role } from "./service/role.js";
import { startTracing } from "./telemetry/start-tracing.js";
import { createUpgrade } from "./upgrade/create-upgrade.js";

export type { Role } from "./service/role.js";

export interface Service {
  /** The public ingress, when this role has one. */
  publicUrl?: string;
  adminUrl: string;
  close(): Promise<void>;
  /** During close(): stop waiting for in-flight deliveries (a second signal); they go back to their queue. */
  hurry(): void;
}

/**
 * The composition root: which parts a role runs, each built once by its builder
 * (src/service/), and the order they stop in. `receiver` takes webhooks, `worker`
 * delivers and recovers, `all` does both; every role serves the admin surface.
 */
export async function startService(given: Config, logger: Logger, role: Role): Promise<Service> {
  const routes = await loadServiceRoutes(given, logger);
  // Ports first: one in use stops the start before anything in Redis or DATA_DIR changes
  // (no credentials or admin token generated for a service that never ran).
  const ports = await bindPorts(given.env, role !== "worker");
  const { auth, adminToken } = await resolveSecrets(given, role !== "worker").catch((error: unknown) => ports.release().then(() => Promise.reject(error)));
  // Every part reads the admin token from ADMIN_TOKEN: the generated one takes its place when unset.
  const config: Config = { ...given, env: { ...given.env, ADMIN_TOKEN: adminToken.token } };
  const { env } = config;
  reportRotation(config, auth, logger);
  // Served at GET /admin/config once the ports are bound; nothing is published before (a
  // start that fails changes nothing commands see).
  const serviceConfig = describeServiceConfig(config, routes, role);
  reportWhatIsOff(serviceConfig, env, logger);
  // Starts even when Redis is down (the ingress answers 503 and /readyz fails until it is back).
  const connections = await createConnections(config, logger, role).catch(async (error: unknown) => {
    await ports.release();
    throw error;
  });
  const tracing = await startTracing(env.OTEL_EXPORTER_OTLP_ENDPOINT, logger);
  // Off the acknowledgement path: its outbox is in Redis, Postgres is read by its writer alone (docs/architecture.md).
  const archive = await startArchive({ config, logger, redisUrl: connections.redis.url, client: connections.client, who: `start --role ${role}`, drains: role !== "receiver" });
  const stores = await createStores({ config, logger, routes, connections, archive, tracing });
  const ready = createReadiness(connections.client, env.QUEUE_PREFIX, routes);
  const upgrade = createUpgrade({ queuePrefix: env.QUEUE_PREFIX, logger, routes, client: connections.client });

  const ingress = auth && ports.public && createIngress({ config, logger, auth, server: ports.public, routes, connections, stores, ready, tracing });
  const delivery = connections.worker && createDelivery({ config, logger, routes, connections: connections.worker, stores, archive: archive !== undefined, tracing });
  const recovery = await createRecovery({ config, logger, role, connections, stores, ready, tracing, serviceName: serviceLabel(serviceConfig), beforeSweep: upgrade.adoptSweepState });
  // Jobs an earlier release left under its key layout: a worker role drains them with its
  // own processors, every role reports what is left (docs/deploy.md, Upgrading).
  const { reconcileWorkerFor } = recovery;
  await upgrade.drain(delivery && reconcileWorkerFor && { dispatcherFor: delivery.dispatcherFor, reconcileWorkerFor });
  const admin = await createAdmin({ config, logger, routes, server: ports.admin, connections, stores, archive, recovery, serviceConfig, auth, ready, adminTokenFile: adminToken.file });

  // Shutdown order: stop taking webhooks first; then every worker at once (each finishes
  // its jobs in flight); then what they wrote with, the admin surface, queues and connections.
  const teardown = () =>
    closeInOrder([
      ingress && (() => ingress.close()),
      () => Promise.all([delivery?.close(), recovery.close(), upgrade.close()]),
      delivery && (() => delivery.flush()),
      () => admin.close(),
      () => stores.close(),
      archive && (() => archive.close()),
      () => connections.close(),
      () => tracing.shutdown(),
    ]);
  let closing: Promise<void> | undefined;
  return {
    publicUrl: ports.public?.url,
    adminUrl: ports.admin.url,
    close: () => (closing ??= teardown()),
    hurry: () => {
      delivery?.hurry();
      recovery.hurry();
      upgrade.hurry();
    },
  };
}

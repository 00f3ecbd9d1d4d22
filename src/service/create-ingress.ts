import type { Config } from "../config/config.js";
import { boundAddress } from "../http/bound-address.js";
import { createReceiverApp } from "../http/receiver-app.js";
import type { LateServing } from "../http/serve-later.js";
import type { Logger } from "../logging/logger.js";
import { createReplicaAcks } from "../redis/replica-acks.js";
import type { Route } from "../routes/route.js";
import type { Tracing } from "../telemetry/start-tracing.js";
import type { ResolvedWebhookAuth } from "../credentials/webhook-credentials.js";
import type { Connections } from "./create-connections.js";
import type { Stores } from "./create-stores.js";

export interface Ingress {
  /** Stops taking webhooks; requests in flight get SHUTDOWN_TIMEOUT_MS to finish. */
  close(): Promise<void>;
}

/** The public webhook receiver on its bound port: 202 once every event of a request is stored. */
export function createIngress(deps: {
  config: Config;
  logger: Logger;
  auth: ResolvedWebhookAuth;
  server: LateServing;
  routes: Route[];
  connections: Connections;
  stores: Stores;
  ready(): Promise<boolean>;
  tracing: Tracing;
}): Ingress {
  const { config, logger, auth, server, connections } = deps;
  const { env } = config;
  const receiver = createReceiverApp({
    auth,
    store: deps.stores.store,
    maxBodyBytes: env.WEBHOOK_MAX_BODY_BYTES,
    defaultStreamId: env.DEFAULT_STREAM_ID,
    ready: deps.ready,
    alive: connections.redis.healthy,
    logger,
    logRepeatsEveryMs: env.LOG_REPEAT_INTERVAL_SECONDS * 1000,
    replicated: env.REDIS_MIN_REPLICAS > 0 ? createReplicaAcks(connections.client, env.REDIS_MIN_REPLICAS) : undefined,
  });
  server.attach(deps.tracing.traceRequests(receiver, "receiver"));
  logger.info({ url: server.url, listening: boundAddress(server), auth: auth.method, routes: deps.routes.map((route) => route.name) }, "receiving webhooks");
  return { close: () => server.close(env.SHUTDOWN_TIMEOUT_MS) };
}

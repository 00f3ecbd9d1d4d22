import { type Config, tenantSettings } from "../config.js";
import type { RedisClient } from "../queue/redis-connection.js";
import { serviceLabel } from "../service-config/service-config.js";
import { CliError } from "./cli-error.js";
import { readServiceConfig } from "./read-service-config.js";

/**
 * Before queueing reconcile jobs for a running worker: when the service that runs it has
 * no tenant settings, every job would end in an error, and a shell that has them would
 * look at fault (issue 18). Exit 2, naming the service and what to set there.
 */
export async function refuseWhenServiceCannotReconcile(config: Config, redis: RedisClient): Promise<void> {
  const service = await readServiceConfig(config, { redis });
  if (service.config && service.config.role !== "receiver" && !service.config.tenantConfigured) {
    throw new CliError(`${serviceLabel(service.config)} runs the reconcile worker but has no tenant settings: set ${tenantSettings} for the service and restart it`, 2);
  }
}

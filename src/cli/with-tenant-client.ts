import { loadConfig, requireTenant, type Config } from "../config/config.js";
import { createTenantClient, type TenantClient } from "../tenant/create-tenant-client.js";
import { TenantValidationError } from "../tenant/tenant-api-error.js";
import { CliError } from "./cli-error.js";
import { cliLogger } from "./cli-logger.js";

/**
 * Runs a tenant command: settings checked first (exit 2 naming what to set), a client
 * logging to stderr (stdout stays clean for tables and --json), and a request the client
 * refuses to send (a malformed id) reported as bad usage, exit 2.
 */
export async function withTenantClient(action: (client: TenantClient, config: Config) => Promise<number | void>): Promise<number | void> {
  const config = loadConfig();
  const tenant = requireTenant(config);
  const logger = cliLogger(config.env.LOG_LEVEL);
  const client = createTenantClient({ ...tenant, logger });
  try {
    return await action(client, config);
  } catch (error) {
    if (error instanceof TenantValidationError) throw new CliError(error.message, 2);
    throw error;
  }
}

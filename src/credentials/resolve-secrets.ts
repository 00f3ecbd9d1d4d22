import type { Config } from "../config/config.js";
import { resolveAdminToken } from "./admin-token.js";
import { resolveWebhookAuth } from "./webhook-credentials.js";

/**
 * The webhook credentials (for a role that receives webhooks) and the admin token, each
 * generated into DATA_DIR once when unset. The start calls it once its ports are bound, so
 * a start that stops on a port in use generates nothing.
 */
export async function resolveSecrets(given: Config, receivesWebhooks: boolean) {
  const auth = receivesWebhooks ? await resolveWebhookAuth(given) : undefined;
  return { auth, adminToken: await resolveAdminToken(given.env) };
}

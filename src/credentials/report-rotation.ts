import type { Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import type { ResolvedWebhookAuth } from "./webhook-credentials.js";

/**
 * Says at start, once, that an old secret is still accepted (never the secret): a rotation
 * left half-done keeps an old credential working, and the operator should see that.
 */
export function reportRotation(config: Config, auth: ResolvedWebhookAuth | undefined, logger: Logger): void {
  if (auth && auth.method !== "none" && auth.previous !== undefined) {
    const setting = { basic: "WEBHOOK_PREVIOUS_PASSWORD", bearer: "WEBHOOK_PREVIOUS_TOKEN", custom_header: "WEBHOOK_PREVIOUS_HEADER_VALUE" }[auth.method];
    logger.warn({ setting }, `webhook credential rotation: the previous secret (${setting}) is accepted beside the current one; streamkeeper_webhook_auth_previous_total counts its uses: once the tenant sends the new one (streams connect) and it stops growing, unset ${setting} and restart (docs/operating.md, Rotating credentials)`);
  }
  if (config.env.ADMIN_PREVIOUS_TOKEN !== undefined) {
    logger.warn({ setting: "ADMIN_PREVIOUS_TOKEN" }, "admin token rotation: ADMIN_PREVIOUS_TOKEN is accepted beside ADMIN_TOKEN; streamkeeper_admin_auth_previous_total counts its uses: once every client has the new token, unset it and restart (docs/operating.md, Rotating credentials)");
  }
}

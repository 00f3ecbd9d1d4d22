import { Counter } from "prom-client";
import { registry } from "./registry.js";

/**
 * Requests let in by the old secret of a rotation: when `webhook_auth_previous_total` stops
 * growing, the tenant sends the new one and WEBHOOK_PREVIOUS_* can go (docs/operating.md).
 */
export const webhookAuthPrevious = new Counter({
  name: "streamkeeper_webhook_auth_previous_total",
  help: "Webhook requests authenticated with WEBHOOK_PREVIOUS_* (the old secret of a rotation)",
  registers: [registry],
});

/** The same for ADMIN_PREVIOUS_TOKEN on /admin/*. */
export const adminAuthPrevious = new Counter({
  name: "streamkeeper_admin_auth_previous_total",
  help: "Admin requests authenticated with ADMIN_PREVIOUS_TOKEN (the old token of a rotation)",
  registers: [registry],
});

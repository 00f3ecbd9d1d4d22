import { createAllowance, type Allowance, type RefillMode } from "./allowance.js";

/** `requests` per `seconds`, the quota a tenant's custom rate-limit policy holds one client to. */
export interface Quota {
  requests: number;
  seconds: number;
}

export interface QuotaDecision {
  allowed: boolean;
  /** `Auth0-RateLimit`, plus `Retry-After` (seconds) when refused (docs/tenant.md#rate-limits). */
  headers: Record<string, string>;
}

export interface ClientQuotas {
  /** Sets (or with undefined, lifts) the quota of a client; it starts whole. */
  set(clientId: string, quota: Quota | undefined): void;
  get(clientId: string): Quota | undefined;
  /** Spends one request of the client's quota; undefined when the client has none. */
  take(clientId: string, now?: number): QuotaDecision | undefined;
}

/**
 * Per-client quotas, announced on every answer to that client in
 * `Auth0-RateLimit: client;q=<requests>;t=<seconds>;r=<remaining>`; they refill the way
 * EMULATOR_RATE_LIMIT_MODE says, as the tenant-wide bucket does.
 */
export function createClientQuotas(mode: RefillMode): ClientQuotas {
  const quotas = new Map<string, { quota: Quota; allowance: Allowance }>();
  return {
    set(clientId, quota) {
      if (quota === undefined) quotas.delete(clientId);
      else quotas.set(clientId, { quota, allowance: createAllowance(quota.requests, quota.seconds, mode) });
    },
    get: (clientId) => quotas.get(clientId)?.quota,
    take(clientId, now = Date.now()) {
      const entry = quotas.get(clientId);
      if (!entry) return undefined;
      const taken = entry.allowance.take(now);
      const headers: Record<string, string> = { "Auth0-RateLimit": `client;q=${entry.quota.requests};t=${entry.quota.seconds};r=${taken.remaining}` };
      if (!taken.allowed) headers["Retry-After"] = String(Math.max(1, Math.ceil(taken.retryAfterMs / 1000)));
      return { allowed: taken.allowed, headers };
    },
  };
}

import type { RequestHandler, Response } from "express";
import { ApiError } from "./api-error.js";
import type { CallLog } from "./call-log.js";
import type { ClientQuotas } from "./client-quotas.js";
import type { ClientRegistry, EmulatorClient } from "./client-registry.js";
import type { RateLimiter } from "./rate-limiter.js";
import type { TokenIssuer } from "./token-issuer.js";

export interface Caller {
  client: EmulatorClient;
  scopes: string[];
}

/** The authenticated caller that `authenticate` left on the response. */
export function callerOf(res: Response): Caller {
  return res.locals.caller as Caller;
}

/**
 * Every `/api/v2` request: verify the bearer JWT, then spend from the client's quota when
 * it has one (`Auth0-RateLimit` on every answer to it; a refusal spends nothing of the
 * bucket) and from the tenant's rate bucket, which every client shares. The `X-RateLimit-*` headers go on every
 * answer, 401s included (those spend from a bucket per address), so a client can always
 * read them. Every answer is counted in the call log.
 */
export function authenticate(deps: { tokens: TokenIssuer; clients: ClientRegistry; limiter: RateLimiter; quotas: ClientQuotas; calls: CallLog }): RequestHandler {
  return async (req, res, next) => {
    const header = req.get("authorization") ?? "";
    const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    let caller: Caller | ApiError;
    try {
      if (!token) throw new ApiError(401, "Invalid token");
      const claims = await deps.tokens.verify(token);
      const client = deps.clients.get(claims.clientId);
      if (!client) throw new ApiError(401, "Invalid token");
      caller = { client, scopes: claims.scopes };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      caller = error;
    }
    // The tenant-wide bucket is shared by every client of the tenant (docs/tenant.md#rate-limits).
    const bucket = caller instanceof ApiError ? `address:${req.ip}` : "tenant";
    const who = caller instanceof ApiError ? bucket : `client:${caller.client.clientId}`;
    const quota = caller instanceof ApiError ? undefined : deps.quotas.take(caller.client.clientId);
    if (quota && !quota.allowed) {
      res.set({ ...deps.limiter.peek(bucket).headers, ...quota.headers });
      deps.calls.record(who, false);
      throw new ApiError(429, "Too Many Requests", "too_many_requests");
    }
    const decision = deps.limiter.take(bucket);
    res.set({ ...decision.headers, ...quota?.headers });
    deps.calls.record(who, decision.allowed, Date.now(), Number(decision.headers["X-RateLimit-Remaining"]));
    if (!decision.allowed) throw new ApiError(429, "Global limit has been reached", "too_many_requests");
    if (caller instanceof ApiError) throw caller;
    res.locals.caller = caller;
    next();
  };
}

/** 403 naming the scope, in the real words (docs/tenant.md#authentication-and-scopes). */
export function requireScope(scope: string): RequestHandler {
  return (_req, res, next) => {
    if (!callerOf(res).scopes.includes(scope)) {
      throw new ApiError(403, `Insufficient scope; expected any of: ${scope}.`, "insufficient_scope");
    }
    next();
  };
}

/** The delivery history accepts only a global client: 401 otherwise (docs/tenant.md#authentication-and-scopes). */
export const requireGlobalClient: RequestHandler = (_req, res, next) => {
  if (!callerOf(res).client.global) throw new ApiError(401, "Client is not global.");
  next();
};

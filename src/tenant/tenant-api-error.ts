import { plainProblem } from "../errors/http-answer.js";

/**
 * The errors of the tenant client, as values the caller can branch on (`instanceof` or
 * `kind`). Messages carry the tenant's own message with credentials already redacted
 * (`redact-secrets.ts`) and end with what to change.
 */

export type TenantApiErrorKind = "unauthorized" | "forbidden" | "not_found" | "rate_limited" | "client" | "server" | "network";

export interface TenantApiErrorDetails {
  /** HTTP status; 0 when no answer came (network error, timeout). */
  status: number;
  /** The tenant's `errorCode` (or the token endpoint's `error`), e.g. `insufficient_scope`. */
  errorCode?: string;
  /** The tenant's message as it sent it (redacted), without our hint. */
  tenantMessage: string;
  /** Our operation name, e.g. `getDelivery`, also the metric label. */
  operation: string;
  requestId?: string;
  /** How long the tenant asked us to wait (429 `Retry-After` or `X-RateLimit-Reset`). */
  retryAfterMs?: number;
}

export class TenantApiError extends Error {
  readonly kind: TenantApiErrorKind = "client";
  readonly status: number;
  readonly errorCode?: string;
  readonly tenantMessage: string;
  readonly operation: string;
  readonly requestId?: string;
  readonly retryAfterMs?: number;
  readonly problemType = plainProblem;

  constructor(message: string, details: TenantApiErrorDetails) {
    super(message);
    this.name = "TenantApiError";
    this.status = details.status;
    this.errorCode = details.errorCode;
    this.tenantMessage = details.tenantMessage;
    this.operation = details.operation;
    this.requestId = details.requestId;
    this.retryAfterMs = details.retryAfterMs;
  }

  /** Relayed by the admin API: a missing stream or event stays a 404; anything else is the tenant failing us (502). */
  get httpStatus(): number {
    return this.status === 404 ? 404 : 502;
  }
}

/** 401: invalid token, bad signature, or a client that is not global (docs/tenant.md#errors). */
export class TenantUnauthorizedError extends TenantApiError {
  override readonly kind = "unauthorized";
  override name = "TenantUnauthorizedError";
}

/** 403: the client lacks a scope; `scope` names it when known. */
export class TenantForbiddenError extends TenantApiError {
  override readonly kind = "forbidden";
  override name = "TenantForbiddenError";
  constructor(
    message: string,
    details: TenantApiErrorDetails,
    readonly scope?: string,
  ) {
    super(message, details);
  }
}

export class TenantNotFoundError extends TenantApiError {
  override readonly kind = "not_found";
  override name = "TenantNotFoundError";
}

/** 429 after every retry was spent; `retryAfterMs` says when the bucket refills. */
export class TenantRateLimitError extends TenantApiError {
  override readonly kind = "rate_limited";
  override name = "TenantRateLimitError";
}

export class TenantServerError extends TenantApiError {
  override readonly kind = "server";
  override name = "TenantServerError";
}

/** No answer at all (connection refused, reset, timeout); `status` is 0. */
export class TenantNetworkError extends TenantApiError {
  override readonly kind = "network";
  override name = "TenantNetworkError";
}

/** A request we refuse to send: `field` names the bad part (e.g. `destination.configuration.webhook_endpoint`). */
export class TenantValidationError extends Error {
  override name = "TenantValidationError";
  /** A request the caller must change. */
  readonly httpStatus = 400;
  readonly problemType = plainProblem;
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** A 2xx answer whose body does not have the shape we rely on; `field` is the path inside it. */
export class TenantResponseError extends Error {
  override name = "TenantResponseError";
  constructor(
    readonly operation: string,
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${operation}: unexpected answer from the tenant at ${field || "(body)"}: ${problem}`);
  }
}

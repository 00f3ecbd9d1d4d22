import { serverWaitMs } from "./rate-limit-state.js";
import { redactSecrets } from "../logging/redact-secrets.js";
import {
  TenantApiError,
  TenantForbiddenError,
  TenantNotFoundError,
  TenantRateLimitError,
  TenantServerError,
  TenantUnauthorizedError,
  type TenantApiErrorDetails,
} from "./tenant-api-error.js";

/** The scope each operation needs, for a 403 whose message does not name one (docs/tenant.md#authentication-and-scopes). */
const requiredScope: Record<string, string> = {
  list_event_streams: "read:event_streams",
  get_event_stream: "read:event_streams",
  update_event_stream: "update:event_streams",
  get_delivery: "read:event_deliveries",
  delete_token_exchange_profile: "delete:token_exchange_profiles",
  read_events: "read:events",
};

export interface ErrorAnswer {
  operation: string;
  status: number;
  headers: Headers;
  /** The raw body text (may be empty, JSON or an HTML page from a proxy). */
  body: string;
  /** Values to cut out of every message. */
  secrets: Iterable<string | undefined>;
  now?: number;
}

/**
 * Maps a non-2xx answer to its error class (stripe-node's one factory). Error bodies are
 * `{"statusCode","error","message","errorCode"?}` from the API and
 * `{"error","error_description"}` from the token endpoint (docs/tenant.md#tokens).
 */
export function tenantErrorFromResponse(answer: ErrorAnswer): TenantApiError {
  const { operation, status, headers } = answer;
  const fields = parseBody(answer.body);
  const clean = (text: string) => redactSecrets(text, answer.secrets).slice(0, 300);
  const tenantMessage = clean(fields.message ?? fields.error_description ?? fields.error ?? (answer.body.trim() || `HTTP ${status}`));
  const details: TenantApiErrorDetails = {
    status,
    errorCode: fields.errorCode ?? (fields.error_description !== undefined ? fields.error : undefined),
    tenantMessage,
    operation,
    requestId: headers.get("x-request-id") ?? headers.get("x-auth0-requestid") ?? undefined,
  };
  const said = `(${status} ${tenantMessage})`;
  if (status === 401) {
    const what = operation === "token" ? "the token endpoint refused the client credentials" : "the tenant refused the access token";
    const global = operation === "get_delivery" ? ", and that the application is a global client (only those may read delivery history)" : "";
    return new TenantUnauthorizedError(`${operation}: ${what} ${said}; check MGMT_CLIENT_ID and MGMT_CLIENT_SECRET${global}`, details);
  }
  if (status === 403) {
    if (operation === "token") {
      return new TenantForbiddenError(`token: the client may not get a token for this audience ${said}; authorize the application for the management API (MGMT_AUDIENCE) in the tenant`, details);
    }
    // "Insufficient scope; expected any of: read:event_deliveries." (docs/tenant.md#authentication-and-scopes)
    const scope = /expected any of:\s*([\w:, ]+?)\.?$/i.exec(tenantMessage)?.[1]?.trim() ?? requiredScope[operation];
    const needs = scope ? `the client needs ${scope}; grant it to the application in the tenant` : "grant the application the missing scope in the tenant";
    return new TenantForbiddenError(`${operation}: insufficient scope: ${needs} ${said}`, details, scope);
  }
  if (status === 404) return new TenantNotFoundError(`${operation}: not found ${said}; check the id`, details);
  if (status === 429) {
    const retryAfterMs = serverWaitMs(headers, answer.now ?? Date.now(), true);
    const when = retryAfterMs === undefined ? "later" : `in ${Math.ceil(retryAfterMs / 1000)} s`;
    return new TenantRateLimitError(`${operation}: rate limited by the tenant ${said}; try again ${when} or send fewer requests`, { ...details, retryAfterMs });
  }
  if (status >= 500) return new TenantServerError(`${operation}: the tenant failed ${said}; try again later`, details);
  return new TenantApiError(`${operation}: the tenant refused the request ${said}`, details);
}

interface ErrorFields {
  message?: string;
  error?: string;
  error_description?: string;
  errorCode?: string;
}

function parseBody(body: string): ErrorFields {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed !== "object" || parsed === null) return {};
    const pick = (key: keyof ErrorFields) => {
      const value = (parsed as Record<string, unknown>)[key];
      return typeof value === "string" && value !== "" ? value : undefined;
    };
    return { message: pick("message"), error: pick("error"), error_description: pick("error_description"), errorCode: pick("errorCode") };
  } catch {
    return {};
  }
}

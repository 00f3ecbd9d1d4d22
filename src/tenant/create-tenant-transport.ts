import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { mgmtApiRateLimitRemaining, mgmtApiRequests } from "../metrics/registry.js";
import { redactSecrets } from "../logging/redact-secrets.js";
import type { Logger } from "../logging/logger.js";
import { issuePath } from "./issue-path.js";
import { readRateLimit, type RateLimitState } from "./rate-limit-state.js";
import { defaultRetryPolicy, retryDecision } from "./retry-decision.js";
import { TenantApiError, TenantNetworkError, TenantResponseError } from "./tenant-api-error.js";
import { tenantErrorFromResponse } from "./tenant-error-from-response.js";
import { createTokenSource } from "./token-source.js";

export interface TenantClientOptions {
  /** The API root, ending in `/api/v2`. */
  apiBaseUrl: string;
  tokenUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  logger?: Logger;
  /** @defaultValue the global fetch of Node 20 */
  fetch?: typeof fetch;
  /** Retries after the first attempt, for 429, 5xx and network errors. @defaultValue 3 */
  maxRetries?: number;
  /** How the client waits between retries (tests pass one that records). @defaultValue timers/promises setTimeout */
  sleep?: (ms: number) => Promise<unknown>;
  /** Per attempt; a request without an answer by then counts as a network error. @defaultValue 30000 */
  timeoutMs?: number;
  /**
   * Awaited before each attempt, retries included, before its timeout starts: the shared
   * pacer's slot (create-paced-tenant.ts). A wait for a slot (a tenant's hold lasts up to a
   * minute) must not spend the attempt's timeout, or the call fails unsent.
   */
  beforeRequest?: () => Promise<void>;
}

/** A 403 fetches a new token (a scope granted since) at most this often. */
const scopeRecheckMs = 15 * 60_000;

/** `expires_in` in seconds (docs/tenant.md#tokens). */
const tokenAnswerSchema = z.looseObject({ access_token: z.string().min(1), expires_in: z.number().positive() });

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export interface Call {
  operation: string;
  method: "GET" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Secrets of this request (write-only webhook credentials) to keep out of errors. */
  secrets?: string[];
}

export interface TenantTransport {
  /** The `X-RateLimit-*` headers of the last answer that had them. */
  rateLimit(): RateLimitState | undefined;
  accessToken(): Promise<string>;
  refuseToken(token: string): void;
  secrets(): string[];
  /** An API call: bearer token, one refresh after a 401; answers any status. */
  call(request: Call): Promise<Answer>;
  /** The same, a non-2xx answer thrown as the typed error of its status. */
  callOk(request: Call): Promise<Answer>;
  errorOf(operation: string, answer: Answer, extra: string[]): Error;
}

/**
 * How every request reaches the tenant: a cached token, up to `maxRetries` retries
 * (retry-decision.ts), one token refresh after a 401, redirects never followed, and errors
 * with the secrets cut out (tenant-error-from-response.ts).
 */
export function createTenantTransport(options: TenantClientOptions): TenantTransport {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const timeoutMs = options.timeoutMs ?? 30_000;
  let scopesRecheckedAt = Number.NEGATIVE_INFINITY;
  const policy = { ...defaultRetryPolicy, maxRetries: options.maxRetries ?? defaultRetryPolicy.maxRetries };
  const apiBaseUrl = options.apiBaseUrl.replace(/\/+$/, "");
  let lastRateLimit: RateLimitState | undefined;
  /** Recent access tokens; with the client secret, cut out of every error message. */
  const recentTokens: string[] = [];
  const secrets = () => [options.clientSecret, ...recentTokens];

  const tokens = createTokenSource(async () => {
    const body = new URLSearchParams({
      grant_type: "client_credentials",
      client_id: options.clientId,
      client_secret: options.clientSecret,
      audience: options.audience,
    });
    const answer = await send("token", options.tokenUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: body.toString(),
    });
    if (answer.status < 200 || answer.status > 299) throw errorOf("token", answer, []);
    const token = parse("token", tokenAnswerSchema, answer.text, secrets());
    recentTokens.unshift(token.access_token);
    recentTokens.length = Math.min(recentTokens.length, 4);
    return { value: token.access_token, expiresIn: token.expires_in };
  });

  /** One request with its retries; answers the last response (any status), throws only when no answer came. */
  async function send(operation: string, url: string, init: RequestInit): Promise<Answer> {
    for (let retries = 0; ; retries++) {
      let answer: Answer | undefined;
      let failure: unknown;
      try {
        await options.beforeRequest?.();
        // Never followed: a redirect would carry the client secret or the token to wherever
        // the tenant (or whoever answers in its place) points (docs/reliability.md#secrets).
        const response = await fetchImpl(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
        answer = { status: response.status, headers: response.headers, text: await response.text() };
        if (answer.status >= 300 && answer.status <= 399) throw redirectError(operation, url, answer, secrets());
      } catch (error) {
        if (error instanceof TenantApiError) {
          mgmtApiRequests.inc({ operation, status: String(answer?.status ?? 0) });
          throw error;
        }
        failure = error;
      }
      mgmtApiRequests.inc({ operation, status: String(answer?.status ?? 0) });
      // The token endpoint has buckets of its own; rateLimit() reports the API's.
      if (answer && operation !== "token") noteRateLimit(answer.headers);
      if (answer && answer.status >= 200 && answer.status <= 299) return answer;
      const decision = retryDecision({ retries, status: answer?.status, headers: answer?.headers, now: Date.now(), random: Math.random() }, policy);
      if (!decision.retry) {
        if (answer) return answer;
        throw networkError(operation, url, failure, timeoutMs, secrets());
      }
      options.logger?.warn({ operation, status: answer?.status ?? 0, retry: retries + 1, delayMs: decision.delayMs }, "tenant API request failed; retrying");
      await sleep(decision.delayMs);
    }
  }

  /**
   * An API call: bearer token, one refresh after a 401 (a new signing key, a revoked token),
   * and after a 403 at most once per `scopeRecheckMs`: a scope granted since the token was
   * issued is not in a cached token until it expires (up to a day), and a scope still
   * missing must not cost a token per call (tenants count issued tokens).
   */
  async function call(request: Call): Promise<Answer> {
    const url = new URL(apiBaseUrl + request.path);
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const attempt = async (token: string) =>
      send(request.operation, url.toString(), {
        method: request.method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(request.body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
      });
    const token = await tokens.get();
    let answer = await attempt(token);
    const recheckScopes = answer.status === 403 && Date.now() - scopesRecheckedAt >= scopeRecheckMs;
    if (answer.status === 401 || recheckScopes) {
      if (recheckScopes) scopesRecheckedAt = Date.now();
      tokens.invalidate(token);
      options.logger?.debug({ operation: request.operation, status: answer.status }, "tenant refused the access token; fetching a new one");
      answer = await attempt(await tokens.get());
    }
    return answer;
  }

  async function callOk(request: Call): Promise<Answer> {
    const answer = await call(request);
    if (answer.status < 200 || answer.status > 299) throw errorOf(request.operation, answer, request.secrets ?? []);
    return answer;
  }

  function errorOf(operation: string, answer: Answer, extra: string[]) {
    return tenantErrorFromResponse({ operation, ...answer, body: answer.text, secrets: [...secrets(), ...extra] });
  }

  function noteRateLimit(headers: Headers) {
    const state = readRateLimit(headers);
    if (!state) return;
    lastRateLimit = state;
    if (state.remaining !== undefined) mgmtApiRateLimitRemaining.set(state.remaining);
  }

  return {
    call,
    callOk,
    errorOf,
    rateLimit: () => (lastRateLimit ? { ...lastRateLimit } : undefined),
    accessToken: () => tokens.get(),
    refuseToken: (token) => tokens.invalidate(token),
    secrets,
  };
}

function redirectError(operation: string, url: string, answer: Answer, secrets: string[]) {
  const setting = operation === "token" ? "MGMT_TOKEN_URL" : "MGMT_API_BASE_URL";
  const target = answer.headers.get("location");
  const shown = (text: string) => redactSecrets(text.replace(/\?.*$/, ""), secrets);
  const message = `${operation}: the tenant answered ${answer.status} at ${shown(url)}, a redirect${target ? ` to ${shown(target)}` : ""}; redirects are never followed (they would carry credentials elsewhere): set ${setting} (or TENANT_DOMAIN) to the final address`;
  return new TenantApiError(message, { status: answer.status, operation, tenantMessage: "" });
}

function networkError(operation: string, url: string, failure: unknown, timeoutMs: number, secrets: string[]) {
  const where = new URL(url).origin;
  const cause = failure instanceof Error ? failure : undefined;
  const reason =
    cause?.name === "TimeoutError"
      ? `no answer within ${timeoutMs} ms`
      : (((cause?.cause as { code?: string } | undefined)?.code ?? cause?.message) || "unknown error");
  const setting = operation === "token" ? "MGMT_TOKEN_URL" : "MGMT_API_BASE_URL";
  const message = `${operation}: cannot reach the tenant at ${where} (${redactSecrets(reason, secrets)}); check ${setting} (or TENANT_DOMAIN) and the network`;
  return new TenantNetworkError(message, { status: 0, operation, tenantMessage: "" });
}

/** A 2xx answer's body, checked against its schema; a TenantResponseError naming the field otherwise. */
export function parse<T extends z.ZodType>(operation: string, schema: T, text: string, secrets: string[] = []): z.output<T> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TenantResponseError(operation, "", `not JSON (${JSON.stringify(redactSecrets(text.slice(0, 80), secrets))})`);
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new TenantResponseError(operation, issuePath(issue.path), issue.message);
}

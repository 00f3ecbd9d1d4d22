import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import type { Logger } from "../logger.js";
import { mgmtApiRateLimitRemaining, mgmtApiRequests } from "../metrics/registry.js";
import { deliveryPageSchema, tenantDate, type DeliveryListQuery, type DeliveryPage } from "./delivery-page.js";
import { deliveryRecordSchema, type DeliveryRecord } from "./delivery-record.js";
import { eventStreamPageSchema, eventStreamSchema, type EventStream, type EventStreamPage } from "./event-stream.js";
import { issuePath } from "./issue-path.js";
import { readRateLimit, type RateLimitState } from "./rate-limit-state.js";
import { redactSecrets } from "../redact-secrets.js";
import { defaultRetryPolicy, retryDecision } from "./retry-decision.js";
import { validateStreamPatch, type StreamPatch } from "./stream-patch.js";
import { TenantApiError, TenantNetworkError, TenantResponseError, TenantValidationError } from "./tenant-api-error.js";
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
}

export interface TenantClient {
  /** One page of `GET /event-streams`. `take` is 1 to 100 (docs/tenant-api.md#event-streams). */
  listEventStreams(options?: { from?: string; take?: number }): Promise<EventStreamPage>;
  /** Every stream, following `next` to the last page. */
  eventStreams(options?: { take?: number }): AsyncGenerator<EventStream, void, undefined>;
  /** `GET /event-streams/{id}`; a missing stream throws TenantNotFoundError. */
  getEventStream(id: string): Promise<EventStream>;
  /** `PATCH /event-streams/{id}`; the patch is checked first (TenantValidationError). */
  updateEventStream(id: string, patch: StreamPatch): Promise<EventStream>;
  /** The delivery history of one event of one stream; undefined when the tenant has none (404). */
  getDelivery(streamId: string, eventId: string): Promise<DeliveryRecord | undefined>;
  /** One page of `GET /event-streams/{id}/deliveries` (docs/tenant-api.md#failed-deliveries); an unknown stream throws TenantNotFoundError. */
  listDeliveries(streamId: string, query?: DeliveryListQuery & { from?: string }): Promise<DeliveryPage>;
  /** Every page of that list, following `next` to the last page. */
  deliveryPages(streamId: string, query?: DeliveryListQuery): AsyncGenerator<DeliveryPage, void, undefined>;
  /** `DELETE /token-exchange-profiles/{id}`: 204, also when already gone (docs/tenant-api.md#token-exchange-profiles). */
  deleteTokenExchangeProfile(id: string): Promise<void>;
  /** The `X-RateLimit-*` headers of the last answer that had them, to pace callers. */
  rateLimit(): RateLimitState | undefined;
  /** The cached access token (or a fresh one), for a request this client does not make itself (open-event-log.ts). */
  accessToken(): Promise<string>;
  /** Forgets a token the tenant refused (401), so the next accessToken() fetches a new one. */
  refuseToken(token: string): void;
  /** The client secret and recent tokens, to cut out of what such a request logs. */
  secrets(): string[];
}

/** `expires_in` in seconds (docs/tenant-api.md#tokens). */
const tokenAnswerSchema = z.looseObject({ access_token: z.string().min(1), expires_in: z.number().positive() });

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface Call {
  operation: string;
  method: "GET" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Secrets of this request (write-only webhook credentials) to keep out of errors. */
  secrets?: string[];
}

/**
 * The only code that talks to the tenant (STYLE.md). Each call: a cached token, up to
 * `maxRetries` retries (retry-decision.ts), one token refresh after a 401, a typed error
 * otherwise (tenant-error-from-response.ts), and a body checked against its schema.
 */
export function createTenantClient(options: TenantClientOptions): TenantClient {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const timeoutMs = options.timeoutMs ?? 30_000;
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
        // Never followed: a redirect would carry the client secret or the token to wherever
        // the tenant (or whoever answers in its place) points (README.md#settings).
        const response = await fetchImpl(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
        answer = { status: response.status, headers: response.headers, text: await response.text() };
        if (answer.status >= 300 && answer.status <= 399) throw redirectError(operation, url, answer);
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
        throw networkError(operation, url, failure);
      }
      options.logger?.warn({ operation, status: answer?.status ?? 0, retry: retries + 1, delayMs: decision.delayMs }, "tenant API request failed; retrying");
      await sleep(decision.delayMs);
    }
  }

  /** An API call: bearer token, one refresh after a 401 (a new signing key, a revoked token). */
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
    if (answer.status === 401) {
      tokens.invalidate(token);
      options.logger?.debug({ operation: request.operation }, "tenant refused the access token; fetching a new one");
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

  function redirectError(operation: string, url: string, answer: Answer) {
    const setting = operation === "token" ? "MGMT_TOKEN_URL" : "MGMT_API_BASE_URL";
    const target = answer.headers.get("location");
    const shown = (text: string) => redactSecrets(text.replace(/\?.*$/, ""), secrets());
    const message = `${operation}: the tenant answered ${answer.status} at ${shown(url)}, a redirect${target ? ` to ${shown(target)}` : ""}; redirects are never followed (they would carry credentials elsewhere): set ${setting} (or TENANT_DOMAIN) to the final address`;
    return new TenantApiError(message, { status: answer.status, operation, tenantMessage: "" });
  }

  function networkError(operation: string, url: string, failure: unknown) {
    const where = new URL(url).origin;
    const cause = failure instanceof Error ? failure : undefined;
    const reason =
      cause?.name === "TimeoutError"
        ? `no answer within ${timeoutMs} ms`
        : (((cause?.cause as { code?: string } | undefined)?.code ?? cause?.message) || "unknown error");
    const setting = operation === "token" ? "MGMT_TOKEN_URL" : "MGMT_API_BASE_URL";
    const message = `${operation}: cannot reach the tenant at ${where} (${redactSecrets(reason, secrets())}); check ${setting} (or TENANT_DOMAIN) and the network`;
    return new TenantNetworkError(message, { status: 0, operation, tenantMessage: "" });
  }

  function noteRateLimit(headers: Headers) {
    const state = readRateLimit(headers);
    if (!state) return;
    lastRateLimit = state;
    if (state.remaining !== undefined) mgmtApiRateLimitRemaining.set(state.remaining);
  }

  async function listEventStreams(page: { from?: string; take?: number } = {}): Promise<EventStreamPage> {
    checkTake(page.take);
    const operation = "list_event_streams";
    const answer = await callOk({ operation, method: "GET", path: "/event-streams", query: { from: page.from, take: page.take } });
    const parsed = parse(operation, eventStreamPageSchema, answer.text);
    // An empty cursor means the same as none: the last page.
    return { eventStreams: parsed.eventStreams, next: parsed.next || undefined };
  }

  async function listDeliveries(streamId: string, query: DeliveryListQuery & { from?: string } = {}): Promise<DeliveryPage> {
    checkTake(query.take);
    const operation = "list_deliveries";
    const answer = await callOk({
      operation,
      method: "GET",
      path: `/event-streams/${pathId("stream id", streamId, "est_")}/deliveries`,
      query: {
        statuses: query.statuses?.join(","),
        event_types: query.eventTypes?.join(","),
        date_from: query.dateFrom && tenantDate(query.dateFrom),
        date_to: query.dateTo && tenantDate(query.dateTo),
        from: query.from,
        take: query.take,
      },
    });
    const parsed = parse(operation, deliveryPageSchema, answer.text);
    return { deliveries: parsed.deliveries, ...(parsed.unreadable.length > 0 ? { unreadable: parsed.unreadable } : {}), next: parsed.next || undefined };
  }

  /** Follows `next` to the last page; cursors are forward-only (docs/tenant-api.md#event-streams), so one seen twice would loop forever. */
  async function* pages<T extends { next?: string }>(operation: string, list: (from: string | undefined) => Promise<T>): AsyncGenerator<T, void, undefined> {
    const seen = new Set<string>();
    let from: string | undefined;
    do {
      const page = await list(from);
      yield page;
      from = page.next;
      if (from !== undefined && seen.has(from)) throw new TenantResponseError(operation, "next", `the cursor ${from} came back twice`);
      if (from !== undefined) seen.add(from);
    } while (from !== undefined);
  }

  return {
    listEventStreams,
    listDeliveries,

    async *eventStreams({ take } = {}) {
      for await (const page of pages("list_event_streams", (from) => listEventStreams({ from, take }))) yield* page.eventStreams;
    },

    deliveryPages: (streamId, query = {}) => pages("list_deliveries", (from) => listDeliveries(streamId, { ...query, from })),

    async getEventStream(id) {
      const operation = "get_event_stream";
      const answer = await callOk({ operation, method: "GET", path: `/event-streams/${pathId("stream id", id, "est_")}` });
      return parse(operation, eventStreamSchema, answer.text);
    },

    async updateEventStream(id, patch) {
      const operation = "update_event_stream";
      const path = `/event-streams/${pathId("stream id", id, "est_")}`;
      const body = validateStreamPatch(patch);
      const auth = body.destination?.configuration.webhook_authorization;
      const writeOnly = auth ? [auth.method === "basic" ? auth.password : auth.method === "bearer" ? auth.token : auth.header_value] : [];
      const answer = await callOk({ operation, method: "PATCH", path, body, secrets: writeOnly });
      return parse(operation, eventStreamSchema, answer.text);
    },

    async getDelivery(streamId, eventId) {
      const operation = "get_delivery";
      const path = `/event-streams/${pathId("stream id", streamId, "est_")}/deliveries/${pathId("event id", eventId, "evt_")}`;
      const answer = await call({ operation, method: "GET", path });
      // 404: no such stream or event, or the event was delivered (a success has no record, docs/tenant-api.md#delivery-history-of-one-event).
      if (answer.status === 404) return undefined;
      if (answer.status < 200 || answer.status > 299) throw errorOf(operation, answer, []);
      return parse(operation, deliveryRecordSchema, answer.text);
    },

    async deleteTokenExchangeProfile(id) {
      await callOk({ operation: "delete_token_exchange_profile", method: "DELETE", path: `/token-exchange-profiles/${pathId("profile id", id)}` });
    },

    rateLimit: () => (lastRateLimit ? { ...lastRateLimit } : undefined),
    accessToken: () => tokens.get(),
    refuseToken: (token) => tokens.invalidate(token),
    secrets,
  };
}

/** `take` is 1 to 100 on every list (docs/tenant-api.md#event-streams). */
function checkTake(take: number | undefined): void {
  if (take !== undefined && !(Number.isInteger(take) && take >= 1 && take <= 100)) {
    throw new TenantValidationError("take", `give an integer from 1 to 100, got ${take}`);
  }
}

/** Path ids: stream and event ids are exactly 26 characters (docs/tenant-api.md#identifiers), e.g. `est_` + 22. */
function pathId(field: string, id: string, prefix?: string): string {
  if (typeof id !== "string" || id.trim() === "") throw new TenantValidationError(field, "give a non-empty id");
  if (prefix !== undefined && id.length !== 26) throw new TenantValidationError(field, `must be exactly 26 characters (${prefix} and 22 more), got ${JSON.stringify(id)}`);
  return encodeURIComponent(id);
}

function parse<T extends z.ZodType>(operation: string, schema: T, text: string, secrets: string[] = []): z.output<T> {
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

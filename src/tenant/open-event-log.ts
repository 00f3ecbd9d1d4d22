import { mgmtApiRequests } from "../metrics/registry.js";
import { redactSecrets } from "../logging/redact-secrets.js";
import { createBoundedSseStream, type EventLogMessage } from "./bounded-sse-stream.js";
import type { TenantClient } from "./create-tenant-client.js";
import { TenantApiError, TenantNetworkError } from "./tenant-api-error.js";
import { tenantErrorFromResponse } from "./tenant-error-from-response.js";

export type { EventLogMessage };

/** Where a read of the tenant's Events API begins (docs/tenant.md#pulling-events). */
export interface EventLogQuery {
  /** Resume after this offset (sent as `Last-Event-ID`, which the tenant prefers to `from`). */
  from?: string;
  /** Else: events at or after this time. Neither: from now on. */
  fromTimestamp?: Date;
  /** Only these types (unset: every type), one `event_type` parameter each. */
  eventTypes?: string[];
}

export interface EventLogStream {
  /** Each message in order: events, `offset-only` markers, `error`, and those past the bound as `oversize`. Ends when the tenant closes. */
  messages: AsyncIterable<EventLogMessage>;
  /** Drops the connection (a reader that stops early, a lost lease). */
  close(): void;
}

export interface OpenEventLogOptions {
  apiBaseUrl: string;
  tenant: Pick<TenantClient, "accessToken" | "refuseToken" | "secrets">;
  query: EventLogQuery;
  /** Aborts the connection at any point. */
  signal: AbortSignal;
  /** No answer (headers) within this long counts as a network error. @defaultValue 30000 */
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
  /** A comment came (`: heartbeat`): no message, but the connection is alive. */
  onComment?(): void;
  /** The stream's `retry:`: how long the tenant asks a consumer to wait before reconnecting. */
  onRetry?(ms: number): void;
  /** No message is held past this many bytes (WEBHOOK_MAX_BODY_BYTES): a larger one comes as `oversize`. */
  maxMessageBytes: number;
  /** A message just passed `maxMessageBytes`; it is read on and dropped until it ends (it may never). */
  onOversize?(): void;
}

/**
 * Opens `GET /api/v2/events` as Server-Sent Events. Parsing is eventsource-parser's
 * (docs/operating.md, "Pulling events": why not our own, and why not the `eventsource`
 * client); reconnecting is the caller's, since only it knows which offset is stored. A
 * non-200 answer throws the tenant client's typed error (401, 403, 410, 429 with its wait);
 * a redirect is never followed (credentials go to the configured origin only), nor is a
 * refused token retried here: it is forgotten, and the caller's next attempt gets a new one.
 */
export async function openEventLog(options: OpenEventLogOptions): Promise<EventLogStream> {
  const { tenant, query } = options;
  const url = new URL(`${options.apiBaseUrl.replace(/\/+$/, "")}/events`);
  if (query.from === undefined && query.fromTimestamp !== undefined) url.searchParams.set("from_timestamp", query.fromTimestamp.toISOString());
  for (const type of query.eventTypes ?? []) url.searchParams.append("event_type", type);
  const token = await tenant.accessToken();
  const connection = new AbortController();
  const stop = () => connection.abort();
  options.signal.addEventListener("abort", stop, { once: true });
  const connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
  const timer = setTimeout(() => connection.abort(new DOMException("no answer", "TimeoutError")), connectTimeoutMs);
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, {
      headers: { authorization: `Bearer ${token}`, accept: "text/event-stream", ...(query.from === undefined ? {} : { "last-event-id": query.from }) },
      redirect: "manual",
      signal: connection.signal,
    });
  } catch (error) {
    options.signal.removeEventListener("abort", stop);
    mgmtApiRequests.inc({ operation: "read_events", status: "0" });
    const cause = error instanceof Error ? error : undefined;
    const reason = cause?.name === "TimeoutError" || connection.signal.reason?.name === "TimeoutError" ? `no answer within ${connectTimeoutMs} ms` : (((cause?.cause as { code?: string } | undefined)?.code ?? cause?.message) || "unknown error");
    throw new TenantNetworkError(`read_events: cannot reach the tenant at ${url.origin} (${redactSecrets(reason, tenant.secrets())}); check MGMT_API_BASE_URL (or TENANT_DOMAIN) and the network`, { status: 0, operation: "read_events", tenantMessage: "" });
  } finally {
    clearTimeout(timer);
  }
  mgmtApiRequests.inc({ operation: "read_events", status: String(response.status) });
  if (response.status !== 200 || !response.body) {
    options.signal.removeEventListener("abort", stop);
    const body = await response.text().catch(() => "");
    // 401: a new key or a revoked token; 403: the scope may have been granted since, and a
    // token carries the scopes of its issue. Either way the next attempt gets a fresh one.
    if (response.status === 401 || response.status === 403) tenant.refuseToken(token);
    if (response.status >= 300 && response.status < 400) {
      throw new TenantApiError(`read_events: the tenant answered a redirect (${response.status}) to ${response.headers.get("location") ?? "nowhere"}; calls to the tenant never follow redirects: set MGMT_API_BASE_URL (or TENANT_DOMAIN) to the API's own address`, {
        status: response.status,
        operation: "read_events",
        tenantMessage: "",
      });
    }
    throw tenantErrorFromResponse({ operation: "read_events", status: response.status, headers: response.headers, body, secrets: [...tenant.secrets(), token] });
  }
  const { maxMessageBytes, onComment, onRetry, onOversize } = options;
  const messages = response.body.pipeThrough(createBoundedSseStream({ maxMessageBytes, onComment, onRetry, onOversize }));
  return {
    messages: {
      async *[Symbol.asyncIterator]() {
        try {
          for await (const message of messages as unknown as AsyncIterable<EventLogMessage>) yield message;
        } finally {
          options.signal.removeEventListener("abort", stop);
          connection.abort();
        }
      },
    },
    close: stop,
  };
}

import { createTenantTransport, parse, type TenantClientOptions } from "./create-tenant-transport.js";
import { deliveryPageSchema, tenantDate, tenantDateBefore, type DeliveryListQuery, type DeliveryPage } from "./delivery-page.js";
import { deliveryRecordSchema, type DeliveryRecord } from "./delivery-record.js";
import { eventStreamPageSchema, eventStreamSchema, type EventStream, type EventStreamPage } from "./event-stream.js";
import type { RateLimitState } from "./rate-limit-state.js";
import { validateStreamPatch, type StreamPatch } from "./stream-patch.js";
import { TenantResponseError, TenantValidationError } from "./tenant-api-error.js";

export type { TenantClientOptions } from "./create-tenant-transport.js";

export interface TenantClient {
  /** One page of `GET /event-streams`. `take` is 1 to 100 (docs/tenant.md#event-streams). */
  listEventStreams(options?: { from?: string; take?: number }): Promise<EventStreamPage>;
  /** Every stream, following `next` to the last page. */
  eventStreams(options?: { take?: number }): AsyncGenerator<EventStream, void, undefined>;
  /** `GET /event-streams/{id}`; a missing stream throws TenantNotFoundError. */
  getEventStream(id: string): Promise<EventStream>;
  /** `PATCH /event-streams/{id}`; the patch is checked first (TenantValidationError). */
  updateEventStream(id: string, patch: StreamPatch): Promise<EventStream>;
  /** The delivery history of one event of one stream; undefined when the tenant has none (404). */
  getDelivery(streamId: string, eventId: string): Promise<DeliveryRecord | undefined>;
  /** One page of `GET /event-streams/{id}/deliveries` (docs/tenant.md#failed-deliveries); an unknown stream throws TenantNotFoundError. */
  listDeliveries(streamId: string, query?: DeliveryListQuery & { from?: string }): Promise<DeliveryPage>;
  /** Every page of that list, following `next` to the last page. */
  deliveryPages(streamId: string, query?: DeliveryListQuery): AsyncGenerator<DeliveryPage, void, undefined>;
  /** `DELETE /token-exchange-profiles/{id}`: 204, also when already gone (docs/tenant.md#token-exchange-profiles). */
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

/**
 * The only code that talks to the tenant (docs/architecture.md, "The folders"). Each call: a cached token, up to
 * `maxRetries` retries (retry-decision.ts), one token refresh after a 401, a typed error
 * otherwise (tenant-error-from-response.ts), and a body checked against its schema.
 */
export function createTenantClient(options: TenantClientOptions): TenantClient {
  const transport = createTenantTransport(options);
  const { call, callOk, errorOf } = transport;

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
        date_to: query.dateTo && tenantDateBefore(query.dateTo),
        from: query.from,
        take: query.take,
      },
    });
    const parsed = parse(operation, deliveryPageSchema, answer.text);
    return { deliveries: parsed.deliveries, ...(parsed.unreadable.length > 0 ? { unreadable: parsed.unreadable } : {}), next: parsed.next || undefined, ...(parsed.cursorless && { cursorless: true }) };
  }

  /** Follows `next` to the last page; cursors are forward-only (docs/tenant.md#event-streams), so one seen twice would loop forever. */
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
      // 404: no such stream or event, or the event was delivered (a success has no record, docs/tenant.md#delivery-history-of-one-event).
      if (answer.status === 404) return undefined;
      if (answer.status < 200 || answer.status > 299) throw errorOf(operation, answer, []);
      return parse(operation, deliveryRecordSchema, answer.text);
    },

    async deleteTokenExchangeProfile(id) {
      await callOk({ operation: "delete_token_exchange_profile", method: "DELETE", path: `/token-exchange-profiles/${pathId("profile id", id)}` });
    },

    rateLimit: transport.rateLimit,
    accessToken: transport.accessToken,
    refuseToken: transport.refuseToken,
    secrets: transport.secrets,
  };
}

/** `take` is 1 to 100 on every list (docs/tenant.md#event-streams). */
function checkTake(take: number | undefined): void {
  if (take !== undefined && !(Number.isInteger(take) && take >= 1 && take <= 100)) {
    throw new TenantValidationError("take", `give an integer from 1 to 100, got ${take}`);
  }
}

/** Path ids: stream and event ids are exactly 26 characters (docs/tenant.md#identifiers), e.g. `est_` + 22. */
function pathId(field: string, id: string, prefix?: string): string {
  if (typeof id !== "string" || id.trim() === "") throw new TenantValidationError(field, "give a non-empty id");
  if (prefix !== undefined && id.length !== 26) throw new TenantValidationError(field, `must be exactly 26 characters (${prefix} and 22 more), got ${JSON.stringify(id)}`);
  return encodeURIComponent(id);
}

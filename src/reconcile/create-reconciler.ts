import type { EventLedger } from "../queue/event-ledger.js";
import type { EventStore } from "../queue/event-store.js";
import type { DeliveryRecord } from "../tenant/delivery-record.js";
import { TenantApiError, TenantNetworkError, TenantRateLimitError, TenantResponseError, TenantServerError, TenantValidationError } from "../tenant/tenant-api-error.js";
import { decideFromRecord } from "./decide-from-record.js";
import { lastingFault } from "../events/lasting-fault.js";
import type { ReconcileJobData, ReconcileResult } from "./reconcile-job.js";

/** What the reconciler needs of the tenant: the delivery history and the stream ids to search. */
export interface ReconcileTenant {
  getDelivery(streamId: string, eventId: string): Promise<DeliveryRecord | undefined>;
  /** Every stream id; with `listedSince` (ms), from a listing begun then or later. */
  streamIds(options?: { listedSince?: number }): Promise<string[]>;
}

export interface ReconcilerDeps {
  ledger: Pick<EventLedger, "has">;
  store: EventStore;
  /** The tenant, or why it cannot be reached (settings missing): then every id that needs a call ends in that error. */
  tenant: ReconcileTenant | { unavailable: string };
  /** DEFAULT_STREAM_ID: the stream of ids that name none; every stream is searched only when neither is set (issue: --stream, else DEFAULT_STREAM_ID, else search). */
  defaultStreamId?: string;
}

/** What `streamkeeper reconcile --dry-run` prints per failed delivery (README.md#the-sweep-failed-deliveries-found-without-being-told). */
export type DryRunOutcome = "would_recover" | "already_received" | "no_payload" | `error: ${string}`;

export interface Reconciler {
  /**
   * One id to its outcome. Tenant API errors become `error: <reason>` outcomes; a 429
   * that outlasted the client's retries (TenantRateLimitError) and Redis errors are
   * thrown, for the worker to pause or retry the job. `queuedAt` (ms, default now): when
   * the reconcile was asked; a stream created before it is searched for an id naming none.
   */
  reconcile(job: ReconcileJobData, queuedAt?: number): Promise<ReconcileResult>;
  /**
   * One delivery record the tenant already gave us (a page of the failed-deliveries list
   * carries each event): the same outcomes as `reconcile`, with no tenant call.
   */
  reconcileRecord(record: DeliveryRecord, options?: { force?: boolean }): Promise<ReconcileResult>;
  /** What `reconcileRecord` would do with the record, storing and sending nothing. */
  assessRecord(record: DeliveryRecord): Promise<{ eventId: string; streamId: string; outcome: DryRunOutcome }>;
}

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const { ledger, store, tenant } = deps;

  /** The record of the asked stream, else the first failed one with its event among every stream, else the first found. */
  async function findRecord(api: ReconcileTenant, eventId: string, streamId: string | undefined, queuedAt: number) {
    if (streamId !== undefined) return { streamId, record: await api.getDelivery(streamId, eventId) };
    let first: { streamId: string; record: DeliveryRecord } | undefined;
    const searched = new Set<string>();
    const search = async (ids: string[]) => {
      for (const id of ids.filter((one) => !searched.has(one))) {
        searched.add(id);
        const record = await api.getDelivery(id, eventId);
        if (record?.status === "failed" && record.event) return { streamId: id, record };
        if (record && !first) first = { streamId: id, record };
      }
      return undefined;
    };
    // In none of the streams known: one created before the reconcile was asked may hold it.
    const found = (await search(await api.streamIds())) ?? (first ? undefined : await search(await api.streamIds({ listedSince: queuedAt })));
    return found ?? first ?? { streamId: undefined, record: undefined };
  }

  return {
    async reconcile({ eventId, streamId: asked, force }, queuedAt = Date.now()) {
      // No tenant call for an id we have (unless forced): 1,000 known ids cost no quota.
      if (!force && (await ledger.has(eventId))) return { eventId, streamId: asked, outcome: "already_received" };
      if ("unavailable" in tenant) return { eventId, streamId: asked, outcome: `error: ${tenant.unavailable}` };
      let found: Awaited<ReturnType<typeof findRecord>>;
      try {
        found = await findRecord(tenant, eventId, asked ?? deps.defaultStreamId, queuedAt);
      } catch (error) {
        // Transient: the job goes back to the queue (its attempts and backoff), so a short
        // tenant outage delays a reconcile instead of ending it. A 429 pauses the queue.
        if (error instanceof TenantRateLimitError || error instanceof TenantNetworkError || error instanceof TenantServerError) throw error;
        if (error instanceof TenantApiError || error instanceof TenantValidationError || error instanceof TenantResponseError) {
          return { eventId, streamId: asked, outcome: `error: ${error.message}` };
        }
        throw error;
      }
      return replay(eventId, found.streamId, found.record, force);
    },

    async reconcileRecord(record, { force = false } = {}) {
      if (!force && (await ledger.has(record.id))) return { eventId: record.id, streamId: record.event_stream_id, outcome: "already_received" };
      return replay(record.id, record.event_stream_id, record, force);
    },

    async assessRecord(record) {
      const base = { eventId: record.id, streamId: record.event_stream_id };
      if (await ledger.has(record.id)) return { ...base, outcome: "already_received" };
      const decision = decideFromRecord(record);
      if ("replay" in decision) return { ...base, outcome: "would_recover" };
      if (decision.outcome === "no_payload" || decision.outcome.startsWith("error:")) return { ...base, outcome: decision.outcome as DryRunOutcome };
      // The list asked for failed deliveries: another status is the tenant changing its mind.
      return { ...base, outcome: `error: the tenant lists it as ${decision.outcome === "not_failed" ? decision.status : decision.outcome}, not failed` };
    },
  };

  async function replay(eventId: string, streamId: string | undefined, record: DeliveryRecord | undefined, force: boolean): Promise<ReconcileResult> {
    const decision = decideFromRecord(record);
    if ("outcome" in decision) return { eventId, streamId, ...decision };
    // The same path as a webhook: dedupe, one job per route, lower priority (event-store.ts).
    let stored: Awaited<ReturnType<EventStore["store"]>>;
    try {
      stored = await store.store(decision.replay, { origin: "reconcile", streamId, force });
    } catch (error) {
      // One event that can never be stored must not stop the others (the sweep's window, a
      // reconcile's list): its outcome says why. Anything else (Redis) is thrown, and retried.
      const reason = lastingFault(error);
      if (reason === undefined) throw error;
      return { eventId, streamId, outcome: `error: the event cannot be stored (${reason}); it is set aside, the others go on` };
    }
    // The webhook won a race with us (it arrived after our ledger check): it is here either way.
    if (stored.status === "duplicate") return { eventId, streamId, outcome: "already_received" };
    return { eventId, streamId, outcome: "recovered", routes: stored.routes };
  }
}

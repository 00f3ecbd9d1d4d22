import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { CloudEvent } from "../../../src/events/cloud-event.js";
import type { EventStore, StoreOptions } from "../../../src/queue/event-store.js";
import { createReconciler, type ReconcileTenant } from "../../../src/reconcile/create-reconciler.js";
import { deliveryRecordSchema, type DeliveryRecord } from "../../../src/tenant/delivery-record.js";
import { TenantNetworkError, TenantRateLimitError } from "../../../src/tenant/tenant-api-error.js";
import { tenantErrorFromResponse } from "../../../src/tenant/tenant-error-from-response.js";

const real: DeliveryRecord = deliveryRecordSchema.parse(
  JSON.parse(readFileSync(new URL("../tenant/fixtures/delivery-record.example.json", import.meta.url), "utf8")),
);
const eventId = real.id;
const streamA = "est_AAAAAAAAAAAAAAAAAAAAAA";
const streamB = real.event_stream_id;

/** A tenant in memory: records by stream, and every call it received. */
function tenantWith(records: Record<string, DeliveryRecord>, streams = Object.keys(records)) {
  const calls: string[] = [];
  const tenant: ReconcileTenant = {
    async getDelivery(streamId, id) {
      calls.push(`get ${streamId}/${id}`);
      return records[streamId];
    },
    async streamIds() {
      calls.push("list");
      return streams;
    },
  };
  return { tenant, calls };
}

/** A ledger and store in memory with the event store's dedupe rule. */
function storeWith(known: string[] = []) {
  const ids = new Set(known);
  const stored: Array<{ event: CloudEvent; options: StoreOptions }> = [];
  const store: EventStore = {
    async store(event, options) {
      if (ids.has(event.id) && !options.force) return { status: "duplicate", routes: [] };
      ids.add(event.id);
      stored.push({ event, options });
      return { status: "stored", routes: ["default"] };
    },
  };
  return { ledger: { has: async (id: string) => ids.has(id) }, store, stored };
}

describe("createReconciler", () => {
  it("when the id is already in the ledger, then already_received without any tenant call", async () => {
    const { tenant, calls } = tenantWith({ [streamB]: real });
    const { ledger, store } = storeWith([eventId]);
    const result = await createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: false });
    expect(result).toEqual({ eventId, streamId: streamB, outcome: "already_received" });
    expect(calls).toEqual([]);
  });

  it("when forced for a known id, then the stored event is replayed with force", async () => {
    const { tenant } = tenantWith({ [streamB]: real });
    const { ledger, store, stored } = storeWith([eventId]);
    const result = await createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: true });
    expect(result.outcome).toBe("recovered");
    expect(stored[0]?.options).toEqual({ origin: "reconcile", streamId: streamB, force: true });
  });

  it("when the record carries the failed event, then it is stored with origin reconcile and the outcome is recovered", async () => {
    const { tenant } = tenantWith({ [streamB]: real });
    const { ledger, store, stored } = storeWith();
    const result = await createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: false });
    expect(result).toEqual({ eventId, streamId: streamB, outcome: "recovered", routes: ["default"] });
    expect(stored).toEqual([{ event: real.event, options: { origin: "reconcile", streamId: streamB, force: false } }]);
  });

  it("when no stream is named, then DEFAULT_STREAM_ID is read and nothing is listed", async () => {
    const { tenant, calls } = tenantWith({ [streamB]: real });
    const { ledger, store } = storeWith();
    const result = await createReconciler({ ledger, store, tenant, defaultStreamId: streamB }).reconcile({ eventId, force: false });
    expect(result.outcome).toBe("recovered");
    expect(calls).toEqual([`get ${streamB}/${eventId}`]);
  });

  it("when neither a stream nor a default is given, then every stream is searched until the failed record with its event", async () => {
    const { event: _event, ...pending } = real;
    const { tenant, calls } = tenantWith({ [streamA]: { ...pending, status: "pending" }, [streamB]: real }, [streamA, streamB]);
    const { ledger, store } = storeWith();
    const result = await createReconciler({ ledger, store, tenant }).reconcile({ eventId, force: false });
    expect(result).toMatchObject({ streamId: streamB, outcome: "recovered" });
    expect(calls).toEqual(["list", `get ${streamA}/${eventId}`, `get ${streamB}/${eventId}`]);
  });

  it("when the search finds only a pending record, then not_failed names its stream and status", async () => {
    const { event: _event, ...pending } = real;
    const { tenant } = tenantWith({ [streamA]: { ...pending, status: "pending" } }, [streamA, streamB]);
    const { ledger, store } = storeWith();
    const result = await createReconciler({ ledger, store, tenant }).reconcile({ eventId, force: false });
    expect(result).toEqual({ eventId, streamId: streamA, outcome: "not_failed", status: "pending" });
  });

  it("when no stream has the event, then not_found", async () => {
    const { tenant } = tenantWith({}, [streamA, streamB]);
    const { ledger, store } = storeWith();
    // Strict: the result says outright that no stream was found (streamId present, undefined).
    expect(await createReconciler({ ledger, store, tenant }).reconcile({ eventId, force: false })).toStrictEqual({ eventId, streamId: undefined, outcome: "not_found" });
  });

  it("when a webhook stores the event between our check and our store, then already_received", async () => {
    const { tenant } = tenantWith({ [streamB]: real });
    const { ledger, store } = storeWith();
    const raced = { ...store, store: async (event: CloudEvent, options: StoreOptions) => (await store.store(event, options), store.store(event, options)) };
    const result = await createReconciler({ ledger, store: raced, tenant }).reconcile({ eventId, streamId: streamB, force: false });
    expect(result.outcome).toBe("already_received");
  });

  it("when the client lacks read:event_deliveries (403), then the outcome is an error naming the scope", async () => {
    const forbidden = tenantErrorFromResponse({
      operation: "get_delivery",
      status: 403,
      headers: new Headers(),
      body: JSON.stringify({ statusCode: 403, error: "Forbidden", message: "Insufficient scope; expected any of: read:event_deliveries.", errorCode: "insufficient_scope" }),
      secrets: [],
    });
    const tenant: ReconcileTenant = { getDelivery: () => Promise.reject(forbidden), streamIds: async () => [streamB] };
    const { ledger, store } = storeWith();
    const result = await createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: false });
    expect(result.outcome).toMatch(/^error: .*read:event_deliveries.*grant it/);
  });

  it("when the tenant settings are missing, then a known id is still already_received and others name the settings", async () => {
    const { ledger, store } = storeWith([eventId]);
    const reconciler = createReconciler({ ledger, store, tenant: { unavailable: "set MGMT_CLIENT_ID to reach the tenant's management API" } });
    expect((await reconciler.reconcile({ eventId, force: false })).outcome).toBe("already_received");
    expect((await reconciler.reconcile({ eventId: "evt_other0000000000000000", force: false })).outcome).toBe("error: set MGMT_CLIENT_ID to reach the tenant's management API");
  });

  it("when the tenant still says 429 after the client's retries, then the error is thrown for the worker to pause the queue", async () => {
    const limited = new TenantRateLimitError("rate limited", { status: 429, tenantMessage: "Global limit has been reached", operation: "get_delivery", retryAfterMs: 1000 });
    const tenant: ReconcileTenant = { getDelivery: () => Promise.reject(limited), streamIds: async () => [] };
    const { ledger, store } = storeWith();
    await expect(createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: false })).rejects.toBe(limited);
  });

  it("when reading the tenant fails with something other than a tenant answer (a fault of ours), then it is thrown for the job to be retried, not turned into an outcome", async () => {
    const fault = new TypeError("Cannot read properties of undefined (reading 'status')");
    const tenant: ReconcileTenant = { getDelivery: () => Promise.reject(fault), streamIds: async () => [streamB] };
    const { ledger, store, stored } = storeWith();
    await expect(createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: false })).rejects.toBe(fault);
    expect(stored).toEqual([]);
  });

  it("when Redis fails while storing, then the error is thrown so the job is retried", async () => {
    const { tenant } = tenantWith({ [streamB]: real });
    const { ledger } = storeWith();
    const broken: EventStore = { store: () => Promise.reject(new Error("Connection is closed.")) };
    await expect(createReconciler({ ledger, store: broken, tenant }).reconcile({ eventId, streamId: streamB, force: false })).rejects.toThrow("Connection is closed.");
  });
});

describe("createReconciler: transient tenant faults", () => {
  it.each([
    ["a 503 after the client's retries", () => tenantErrorFromResponse({ operation: "get_delivery", status: 503, headers: new Headers(), body: "{}", secrets: [] })],
    ["no answer at all", () => new TenantNetworkError("get_delivery: connect ECONNREFUSED", { status: 0, tenantMessage: "", operation: "get_delivery" })],
  ])("when the tenant gives %s, then the job fails to be retried instead of ending with an error outcome", async (_name, fault) => {
    const tenant: ReconcileTenant = {
      getDelivery: async () => {
        throw fault();
      },
      streamIds: async () => [streamB],
    };
    const { ledger, store, stored } = storeWith();
    await expect(createReconciler({ ledger, store, tenant }).reconcile({ eventId, streamId: streamB, force: false })).rejects.toThrow();
    expect(stored).toEqual([]);
  });

  describe("a record from the failed-deliveries list", () => {
    const failedWithout: DeliveryRecord = { ...real, status: "failed", event: undefined };

    it("when it carries the event, then it is recovered with no tenant call; a known id is already_received", async () => {
      const { tenant, calls } = tenantWith({});
      const { ledger, store, stored } = storeWith();
      const reconciler = createReconciler({ ledger, store, tenant });
      expect(await reconciler.reconcileRecord(real)).toMatchObject({ eventId, streamId: streamB, outcome: "recovered" });
      expect(stored).toHaveLength(1);
      expect(stored[0]!.options).toMatchObject({ origin: "reconcile", streamId: streamB });
      expect(await reconciler.reconcileRecord(real)).toMatchObject({ eventId, outcome: "already_received" });
      expect(calls).toEqual([]);
    });

    it("when a listed record's id is already here, then it is already_received without touching the store, unless forced", async () => {
      const { tenant } = tenantWith({});
      const { ledger, store, stored } = storeWith([eventId]);
      let storeCalls = 0;
      const counted: EventStore = { store: (event, options) => (storeCalls++, store.store(event, options)) };
      const reconciler = createReconciler({ ledger, store: counted, tenant });
      expect(await reconciler.reconcileRecord(real)).toEqual({ eventId, streamId: streamB, outcome: "already_received" });
      expect(storeCalls).toBe(0);
      expect(await reconciler.reconcileRecord(real, { force: true })).toMatchObject({ eventId, outcome: "recovered" });
      expect(storeCalls).toBe(1);
      expect(stored[0]!.options).toMatchObject({ origin: "reconcile", force: true });
    });

    it("when assessed and the list's record is not failed after all, or its copy is not a valid event, then the dry run says so as an error outcome", async () => {
      const { tenant } = tenantWith({});
      const { ledger, store, stored } = storeWith();
      const reconciler = createReconciler({ ledger, store, tenant });
      expect(await reconciler.assessRecord({ ...real, status: "pending" })).toEqual({ eventId, streamId: streamB, outcome: "error: the tenant lists it as pending, not failed" });
      const invalid = await reconciler.assessRecord({ ...real, event: { ...real.event!, time: "yesterday" } });
      expect(invalid).toEqual({ eventId, streamId: streamB, outcome: expect.stringMatching(/^error: the tenant's stored copy of the event is not a valid CloudEvent .*event\.time/) });
      expect(stored).toEqual([]);
    });

    it("when assessed (a dry run), then would_recover, already_received or no_payload, and nothing is stored", async () => {
      const { tenant, calls } = tenantWith({});
      const { ledger, store, stored } = storeWith();
      const reconciler = createReconciler({ ledger, store, tenant });
      expect(await reconciler.assessRecord(real)).toEqual({ eventId, streamId: streamB, outcome: "would_recover" });
      expect(await reconciler.assessRecord(failedWithout)).toEqual({ eventId, streamId: streamB, outcome: "no_payload" });
      expect(stored).toEqual([]);
      const known = storeWith([eventId]);
      expect(await createReconciler({ ...known, tenant }).assessRecord(real)).toMatchObject({ outcome: "already_received" });
      expect(calls).toEqual([]);
    });
  });
});

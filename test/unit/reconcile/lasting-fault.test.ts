import { describe, expect, it } from "vitest";
import { createReconciler } from "../../../src/reconcile/create-reconciler.js";
import type { DeliveryRecord } from "../../../src/tenant/delivery-record.js";
import { userEvent } from "../../helpers/fixtures.js";

const record = (): DeliveryRecord => {
  const event = userEvent();
  return { id: event.id, event_stream_id: "est_38ANnv8pQhqsZrX2VFbftv", status: "failed", event_type: event.type, attempts: [], event: event as DeliveryRecord["event"] };
};

const reconcilerWhoseStoreThrows = (error: Error) =>
  createReconciler({
    ledger: { has: async () => false },
    store: { store: () => Promise.reject(error) },
    tenant: { unavailable: "not needed: records come with their event" },
  });

describe("reconcileRecord: a store that fails", () => {
  it("when the store fails for a reason of the event itself (a stack overflow, a type error), then the outcome is an error naming it, not a throw", async () => {
    for (const error of [new RangeError("Maximum call stack size exceeded"), new TypeError("Do not know how to serialize a BigInt")]) {
      const result = await reconcilerWhoseStoreThrows(error).reconcileRecord(record());
      expect(result.outcome).toMatch(new RegExp(`^error: the event cannot be stored \\(${error.name}: ${error.message}\\)`));
    }
  });

  it("when the store fails for Redis (a fault that passes), then it throws, so the sweep stops and retries", async () => {
    await expect(reconcilerWhoseStoreThrows(new Error("Connection is closed.")).reconcileRecord(record())).rejects.toThrow("Connection is closed.");
  });
});

import { describe, expect, it } from "vitest";
import { sweepWindow } from "../../../src/sweep/sweep-window.js";
import type { DeliveryListQuery, DeliveryPage } from "../../../src/tenant/delivery-page.js";
import type { DeliveryRecord } from "../../../src/tenant/delivery-record.js";

const record = (id: string): DeliveryRecord => ({ id, event_stream_id: "est_1", status: "failed", event_type: "user.created", attempts: [] });

/** A tenant answering bare arrays of at most 100 from `failedAt` (ms per id), filtered as the list does: whole seconds. */
function bareArrayTenant(failedAt: Map<string, number>, { filtersDates = true } = {}) {
  const asked: Array<{ from: number; to: number }> = [];
  return {
    asked,
    tenant: {
      async *deliveryPages(_streamId: string, query: DeliveryListQuery = {}): AsyncGenerator<DeliveryPage> {
        const from = Math.floor(query.dateFrom!.getTime() / 1000) * 1000;
        const to = Math.ceil(query.dateTo!.getTime() / 1000) * 1000;
        asked.push({ from, to });
        const ids = [...failedAt].filter(([, at]) => !filtersDates || (at >= from && at < to)).map(([id]) => id);
        yield { deliveries: ids.slice(0, query.take ?? 50).map(record), cursorless: true };
      },
    },
  };
}

const assessing = { reconcileRecord: async () => ({ eventId: "", outcome: "recovered" as const }), assessRecord: async (r: DeliveryRecord) => ({ eventId: r.id, streamId: r.event_stream_id, outcome: "would_recover" as const }) };

describe("sweepWindow over a list without cursors", () => {
  it("when a window's bounds fall inside seconds, then the halves are whole seconds as the list takes them: two seconds of 60 each are both read whole", async () => {
    const failedAt = new Map<string, number>();
    for (let n = 0; n < 60; n++) failedAt.set(`evt_a${n}`, 10_200).set(`evt_b${n}`, 11_100);
    const { tenant, asked } = bareArrayTenant(failedAt);
    const figures = await sweepWindow({ tenant, reconciler: assessing, streamId: "est_1", from: new Date(10_500), to: new Date(11_300), dryRun: true });
    expect(figures.recovered.sort()).toEqual([...failedAt.keys()].sort());
    expect(figures.unlisted).toEqual([]);
    expect(asked).toEqual([{ from: 10_000, to: 12_000 }, { from: 10_000, to: 11_000 }, { from: 11_000, to: 12_000 }]);
  });

  it("when the tenant's dates narrow nothing, then the window stops splitting after its budget of list calls and says what it could not list", async () => {
    const failedAt = new Map(Array.from({ length: 150 }, (_, n) => [`evt_${n}`, 5_000] as const));
    const { tenant, asked } = bareArrayTenant(failedAt, { filtersDates: false });
    const figures = await sweepWindow({ tenant, reconciler: assessing, streamId: "est_1", from: new Date(0), to: new Date(3_600_000), dryRun: true });
    // 64 calls, then one for each half still waiting on the way back up (12 levels for an hour).
    expect(asked.length).toBeLessThanOrEqual(64 + 12);
    expect(figures.unlisted.map((span) => span.reason)).toContainEqual(expect.stringMatching(/64 list calls did not narrow it \(does the tenant filter on the dates\?\)/));
  });
});

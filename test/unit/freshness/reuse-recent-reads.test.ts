import { afterEach, describe, expect, it, vi } from "vitest";
import type { FreshnessReader, RouteActivity } from "../../../src/freshness/create-freshness-reader.js";
import { reuseRecentReads } from "../../../src/freshness/reuse-recent-reads.js";

function countingReader() {
  let reads = 0;
  const reader: FreshnessReader = {
    async read(routes) {
      reads += 1;
      const window = { count: reads, p50: null, p99: null, missed: 0 };
      return new Map<string, RouteActivity>(routes.map((route) => [route, { deliveredPerMinute: reads, staleLastDay: 0, last5m: window, lastDay: window }]));
    },
  };
  return { reader, reads: () => reads };
}

describe("freshness reads shared between pages", () => {
  afterEach(() => vi.useRealTimers());

  it("when pages ask within 2 s, then one read serves them; up to 30 s old, the last read answers while the next runs; older, the caller waits for a new one", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { reader, reads } = countingReader();
    const shared = reuseRecentReads(reader);
    const first = await Promise.all([shared.read(["crm"], Date.now()), shared.read(["crm"], Date.now())]);
    expect(reads()).toBe(1);
    expect(first.map((activity) => activity.get("crm")!.deliveredPerMinute)).toEqual([1, 1]);
    vi.setSystemTime(1_001_500);
    expect((await shared.read(["crm"], Date.now())).get("crm")!.deliveredPerMinute).toBe(1);
    expect(reads()).toBe(1);

    vi.setSystemTime(1_010_000);
    // Answered from the last read at once; a new read has started.
    expect((await shared.read(["crm"], Date.now())).get("crm")!.deliveredPerMinute).toBe(1);
    await vi.waitFor(() => expect(reads()).toBe(2));
    expect((await shared.read(["crm"], Date.now())).get("crm")!.deliveredPerMinute).toBe(2);

    vi.setSystemTime(1_100_000);
    expect((await shared.read(["crm"], Date.now())).get("crm")!.deliveredPerMinute).toBe(3);
  });
});

import { afterEach, describe, expect, it, vi } from "vitest";
import { shareRecent } from "../../../src/admin/share-recent.js";

describe("the overview shared between pages", () => {
  afterEach(() => vi.useRealTimers());

  it("when overviews are asked within a second, then one is computed; a failed one is not kept", async () => {
    vi.useFakeTimers({ now: 5_000_000 });
    let computed = 0;
    let fail = true;
    const overview = shareRecent(async () => {
      computed += 1;
      if (fail) throw new Error("Redis away");
      return computed;
    }, 1000);
    await expect(overview()).rejects.toThrow("Redis away");
    fail = false;
    expect(await Promise.all([overview(), overview(), overview()])).toEqual([2, 2, 2]);
    vi.setSystemTime(5_000_900);
    expect(await overview()).toBe(2);
    vi.setSystemTime(5_001_100);
    expect(await overview()).toBe(3);
  });
});

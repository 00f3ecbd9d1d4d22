import { describe, expect, it } from "vitest";
import { createStreamIdCache } from "../../../src/reconcile/create-stream-id-cache.js";

describe("createStreamIdCache", () => {
  it("when many ids look up streams at once and later, then the tenant is listed once within the ttl", async () => {
    let listings = 0;
    const cache = createStreamIdCache(async function* () {
      listings++;
      yield { id: "est_1" };
      yield { id: "est_2" };
    }, 60_000);
    const all = await Promise.all(Array.from({ length: 100 }, () => cache.ids()));
    expect(all.every((ids) => ids.join() === "est_1,est_2")).toBe(true);
    await cache.ids();
    expect(listings).toBe(1);
  });

  it("when a listing fails, then it is not kept and the next call lists again", async () => {
    let listings = 0;
    const cache = createStreamIdCache(async function* () {
      listings++;
      if (listings === 1) throw new Error("503");
      yield { id: "est_1" };
    });
    await expect(cache.ids()).rejects.toThrow("503");
    expect(await cache.ids()).toEqual(["est_1"]);
  });

  it("when asked for a listing begun since a time, then one begun before it is made again, and one begun since is reused", async () => {
    let listings = 0;
    const cache = createStreamIdCache(async function* () {
      listings++;
      yield { id: `est_${listings}` };
    }, 60_000);
    expect(await cache.ids()).toEqual(["est_1"]);
    const asked = Date.now() + 1;
    expect(await cache.ids({ listedSince: asked })).toEqual(["est_2"]);
    expect(await cache.ids({ listedSince: asked - 1 })).toEqual(["est_2"]);
    expect(listings).toBe(2);
  });
});

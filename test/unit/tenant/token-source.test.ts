import { describe, expect, it } from "vitest";
import { createTokenSource, type AccessToken } from "../../../src/tenant/token-source.js";

function counting(expiresIn = 86_400) {
  let calls = 0;
  const fetchToken = async (): Promise<AccessToken> => {
    calls += 1;
    await Promise.resolve();
    return { value: `token-${calls}`, expiresIn };
  };
  return { fetchToken, calls: () => calls };
}

describe("createTokenSource", () => {
  it("when many callers ask at once, then one token request serves them all", async () => {
    const source = counting();
    const tokens = createTokenSource(source.fetchToken);
    const got = await Promise.all(Array.from({ length: 20 }, () => tokens.get()));
    expect(new Set(got)).toEqual(new Set(["token-1"]));
    expect(await tokens.get()).toBe("token-1");
    expect(source.calls()).toBe(1);
  });

  it("when the token is within 10 s of expiry, then a new one is fetched", async () => {
    let now = 1_000_000;
    const source = counting(60);
    const tokens = createTokenSource(source.fetchToken, () => now);
    await tokens.get();
    now += 49_999;
    expect(await tokens.get()).toBe("token-1");
    now += 1;
    expect(await tokens.get()).toBe("token-2");
  });

  it("when a token is invalidated, then the next get fetches again, and a stale invalidate is ignored", async () => {
    const source = counting();
    const tokens = createTokenSource(source.fetchToken);
    const first = await tokens.get();
    tokens.invalidate(first);
    expect(await tokens.get()).toBe("token-2");
    tokens.invalidate(first);
    expect(await tokens.get()).toBe("token-2");
  });

  it("when the token request fails, then the failure is not cached", async () => {
    let fail = true;
    const tokens = createTokenSource(async () => {
      if (fail) throw new Error("down");
      return { value: "ok", expiresIn: 100 };
    });
    await expect(tokens.get()).rejects.toThrow("down");
    fail = false;
    expect(await tokens.get()).toBe("ok");
  });
});

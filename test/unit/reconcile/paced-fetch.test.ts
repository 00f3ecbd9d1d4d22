import { describe, expect, it } from "vitest";
import { holdAfter } from "../../../src/reconcile/paced-fetch.js";

const now = Date.parse("2025-09-08T06:35:17.000Z");
const answer = (status: number, headers: Record<string, string>) => ({ status, headers: new Headers(headers) });

describe("holdAfter", () => {
  it("when the bucket has room, then calls go on", () => {
    expect(holdAfter(answer(200, { "X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "12", "X-RateLimit-Reset": String(now / 1000 + 1) }), now)).toBe(0);
  });

  it("when the bucket is empty, then calls hold until X-RateLimit-Reset (UNIX seconds)", () => {
    expect(holdAfter(answer(200, { "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": String(now / 1000 + 2) }), now)).toBe(2000);
  });

  it("when the tenant answers 429, then Retry-After wins over the reset time", () => {
    expect(holdAfter(answer(429, { "Retry-After": "3", "X-RateLimit-Reset": String(now / 1000 + 9) }), now)).toBe(3000);
    expect(holdAfter(answer(429, { "X-RateLimit-Reset": String(now / 1000 + 9) }), now)).toBe(9000);
  });

  it("when a 429 has no hint at all, then calls hold a second", () => {
    expect(holdAfter(answer(429, {}), now)).toBe(1000);
  });

  it("when others drained the bucket below their part, then we wait for it to refill to that part", () => {
    const headers = (remaining: number) => ({ "X-RateLimit-Limit": "50", "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": String(now / 1000 + 1) });
    // share 0.5 of a 50 bucket: the others keep 25; at 20 left, 5 tokens at 50/s is 100 ms.
    expect(holdAfter(answer(200, headers(20)), now, 0.5)).toBe(100);
    expect(holdAfter(answer(200, headers(30)), now, 0.5)).toBe(0);
    expect(holdAfter(answer(200, headers(20)), now, 1)).toBe(0);
  });
});

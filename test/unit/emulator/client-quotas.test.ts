import { describe, expect, it } from "vitest";
import { createClientQuotas } from "../../../src/emulator/client-quotas.js";

const t0 = 1_700_000_000_000;

describe("createClientQuotas", () => {
  it("when a client has a quota, then every answer announces it in Auth0-RateLimit, and one beyond it is refused with Retry-After", () => {
    const quotas = createClientQuotas("bucket");
    quotas.set("app", { requests: 2, seconds: 1 });
    expect(quotas.take("app", t0)).toEqual({ allowed: true, headers: { "Auth0-RateLimit": "client;q=2;t=1;r=1" } });
    expect(quotas.take("app", t0)).toEqual({ allowed: true, headers: { "Auth0-RateLimit": "client;q=2;t=1;r=0" } });
    expect(quotas.take("app", t0)).toEqual({ allowed: false, headers: { "Auth0-RateLimit": "client;q=2;t=1;r=0", "Retry-After": "1" } });
    // A bucket refills continuously: one request after half a second.
    expect(quotas.take("app", t0 + 500)?.allowed).toBe(true);
  });

  it("when quotas refill as windows, then a spent quota stays spent until its window ends", () => {
    const quotas = createClientQuotas("window");
    quotas.set("app", { requests: 1, seconds: 10 });
    expect(quotas.take("app", t0)?.allowed).toBe(true);
    expect(quotas.take("app", t0 + 9000)).toEqual({ allowed: false, headers: { "Auth0-RateLimit": "client;q=1;t=10;r=0", "Retry-After": "1" } });
    expect(quotas.take("app", t0 + 10_000)?.allowed).toBe(true);
  });

  it("when a client has no quota, or it was lifted, then there is nothing to announce", () => {
    const quotas = createClientQuotas("bucket");
    expect(quotas.take("app", t0)).toBeUndefined();
    quotas.set("app", { requests: 1, seconds: 1 });
    quotas.set("app", undefined);
    expect(quotas.take("app", t0)).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import { readClientQuota } from "../../../src/tenant/read-client-quota.js";

const quota = (value: string) => readClientQuota(new Headers({ "Auth0-RateLimit": value }));

describe("readClientQuota", () => {
  it("when the tenant announces a client quota, then its requests, seconds and remaining are read", () => {
    expect(quota("client;q=10;t=1;r=9")).toEqual({ requests: 10, seconds: 1, remaining: 9 });
    expect(quota("client; q=600; t=60")).toEqual({ requests: 600, seconds: 60, remaining: undefined });
  });

  it("when the header is absent, names another scope or is unreadable, then there is no quota", () => {
    expect(readClientQuota(new Headers())).toBeUndefined();
    expect(quota("tenant;q=10;t=1;r=9")).toBeUndefined();
    expect(quota("client;q=ten;t=1")).toBeUndefined();
    expect(quota("client;q=0;t=1;r=0")).toBeUndefined();
    expect(quota("client;t=1;r=9")).toBeUndefined();
  });
});

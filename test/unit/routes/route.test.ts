import { describe, expect, it } from "vitest";
import { routeMatches, type Route } from "../../../src/routes/route.js";

const route = (...match: string[]): Route => ({
  name: "r", match, url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 3, concurrency: 1,
});

describe("routeMatches", () => {
  it("when the pattern is *, then every type matches", () => {
    expect(routeMatches(route("*"), "user.created")).toBe(true);
    expect(routeMatches(route("*"), "organization.member.added")).toBe(true);
  });

  it("when the pattern is a prefix, then only types under it match", () => {
    const users = route("user.*");
    expect(routeMatches(users, "user.created")).toBe(true);
    expect(routeMatches(users, "user.deleted")).toBe(true);
    expect(routeMatches(users, "users.created")).toBe(false);
    expect(routeMatches(users, "user")).toBe(false);
    expect(routeMatches(users, "organization.created")).toBe(false);
  });

  it("when the pattern is a nested prefix, then deeper types match", () => {
    expect(routeMatches(route("organization.member.*"), "organization.member.added")).toBe(true);
    expect(routeMatches(route("organization.member.*"), "organization.created")).toBe(false);
  });

  it("when the pattern is an exact type, then only that type matches", () => {
    expect(routeMatches(route("user.created"), "user.created")).toBe(true);
    expect(routeMatches(route("user.created"), "user.created.extra")).toBe(false);
    expect(routeMatches(route("user.created"), "user.deleted")).toBe(false);
  });

  it("when a route has several patterns, then any of them matches", () => {
    const r = route("user.deleted", "organization.*");
    expect(routeMatches(r, "user.deleted")).toBe(true);
    expect(routeMatches(r, "organization.updated")).toBe(true);
    expect(routeMatches(r, "user.created")).toBe(false);
  });
});

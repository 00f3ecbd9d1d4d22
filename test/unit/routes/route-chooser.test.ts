import { describe, expect, it } from "vitest";
import { createRouteChooser } from "../../../src/routes/route-chooser.js";
import type { Route } from "../../../src/routes/route.js";
import { userEvent } from "../../helpers/fixtures.js";

function route(name: string, overrides: Partial<Route> = {}): Route {
  return { name, match: ["user.*"], url: "http://127.0.0.1:1/", headers: {}, timeoutMs: 1000, concurrency: 1, ...overrides };
}

/** A user event whose user object has these fields added. */
function user(fields: Record<string, unknown>, overrides: Parameters<typeof userEvent>[0] = {}) {
  const event = userEvent(overrides);
  Object.assign((event.data as { object: object }).object, fields);
  return event;
}

/** Whether the route with this filter takes the event. */
function selects(filter: Record<string, unknown>, event: object & { type: string }): boolean | null | undefined {
  return createRouteChooser([route("r", { filter })]).choose("r", event)?.filter;
}

describe("route filters: each operator family, with mingo's semantics", () => {
  const pro = user({ app_metadata: { plan: "pro", seats: 12 }, org_id: "org_1", roles: ["admin", "billing"], logins: [{ country: "FR" }, { country: "DE" }] });

  it("when a path holds a bare value, then it is $eq; $ne, $in and $nin compare the same way", () => {
    expect(selects({ "data.object.app_metadata.plan": "pro" }, pro)).toBe(true);
    expect(selects({ "data.object.app_metadata.plan": { $eq: "free" } }, pro)).toBe(false);
    expect(selects({ "data.object.app_metadata.plan": { $ne: "free" } }, pro)).toBe(true);
    expect(selects({ "data.object.app_metadata.plan": { $in: ["pro", "team"] } }, pro)).toBe(true);
    expect(selects({ "data.object.app_metadata.plan": { $nin: ["pro", "team"] } }, pro)).toBe(false);
  });

  it("when a filter compares numbers, then $gt $gte $lt $lte hold", () => {
    expect(selects({ "data.object.app_metadata.seats": { $gt: 10, $lte: 12 } }, pro)).toBe(true);
    expect(selects({ "data.object.app_metadata.seats": { $gte: 13 } }, pro)).toBe(false);
    expect(selects({ "data.object.app_metadata.seats": { $lt: 12 } }, pro)).toBe(false);
  });

  it("when a filter asks for a field or a pattern, then $exists and $regex (with $options) answer", () => {
    expect(selects({ "data.object.org_id": { $exists: true } }, pro)).toBe(true);
    expect(selects({ a0purpose: { $exists: false } }, pro)).toBe(true);
    expect(selects({ type: { $regex: "^USER\\.", $options: "i" } }, pro)).toBe(true);
    expect(selects({ source: { $regex: "other-tenant" } }, pro)).toBe(false);
  });

  it("when a filter combines, then $and $or $nor and $not hold", () => {
    expect(selects({ $and: [{ type: "user.updated" }, { "data.object.org_id": "org_1" }] }, pro)).toBe(true);
    expect(selects({ $or: [{ "data.object.org_id": "org_2" }, { "data.object.app_metadata.plan": "pro" }] }, pro)).toBe(true);
    expect(selects({ $nor: [{ a0purpose: "test" }, { "data.object.org_id": "org_2" }] }, pro)).toBe(true);
    expect(selects({ type: { $not: { $regex: "^user\\." } } }, pro)).toBe(false);
  });

  it("when a filter looks into arrays, then $size $all and $elemMatch hold, and a path through an array matches any element", () => {
    expect(selects({ "data.object.roles": { $size: 2 } }, pro)).toBe(true);
    expect(selects({ "data.object.roles": { $all: ["billing", "admin"] } }, pro)).toBe(true);
    expect(selects({ "data.object.logins": { $elemMatch: { country: "DE" } } }, pro)).toBe(true);
    expect(selects({ "data.object.logins.country": "FR" }, pro)).toBe(true);
    expect(selects({ "data.object.roles": { $all: ["owner"] } }, pro)).toBe(false);
  });
});

describe("createRouteChooser", () => {
  it("when a route has no filter, then its filter step is null and a matching event is delivered", () => {
    expect(createRouteChooser([route("r")]).choose("r", userEvent())).toEqual({ match: true, filter: null, testEvents: true, deliver: true });
  });

  it("when the type does not match, then it is not delivered whatever the filter says", () => {
    expect(createRouteChooser([route("r", { match: ["organization.*"] })]).choose("r", userEvent())).toMatchObject({ match: false, deliver: false });
  });

  it("when a route drops test events, then a test event is not delivered there, and other events are", () => {
    const chooser = createRouteChooser([route("r", { testEvents: "drop" })]);
    expect(chooser.choose("r", userEvent({ a0purpose: "test" }))).toEqual({ match: true, filter: null, testEvents: false, deliver: false });
    expect(chooser.choose("r", userEvent())?.deliver).toBe(true);
    expect(createRouteChooser([route("r", { testEvents: "deliver" })]).choose("r", userEvent({ a0purpose: "test" }))?.deliver).toBe(true);
  });

  it("when no route filters, then there is no narrowing step at all (fan-out pays nothing)", () => {
    expect(createRouteChooser([route("a"), route("b", { testEvents: "deliver" })]).narrow).toBeUndefined();
  });

  it("when some routes filter, then narrow splits the matched routes into those that take the event and those that filtered it", () => {
    const chooser = createRouteChooser([route("a"), route("b", { filter: { "data.object.org_id": "org_1" } }), route("c", { testEvents: "drop" })]);
    expect(chooser.narrow!(user({ org_id: "org_2" }, { a0purpose: "test" }), ["a", "b", "c"])).toEqual({ routes: ["a"], filtered: ["b", "c"] });
    expect(chooser.narrow!(user({ org_id: "org_1" }), ["a", "b", "c"])).toEqual({ routes: ["a", "b", "c"], filtered: [] });
  });
});

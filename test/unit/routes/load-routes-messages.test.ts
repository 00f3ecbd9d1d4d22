import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/config/config.js";
import { parseRoutes } from "../../../src/routes/load-routes.js";

function problemsOf(yamlField: string): string[] {
  try {
    parseRoutes(`- name: users\n  match: user.*\n  url: https://users.internal/hook\n  ${yamlField}\n`, "routes.yaml");
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

/** Where zod's own text showed through ("Invalid input: expected boolean, received string"), our words. */
describe("routes file messages in the project's words", () => {
  it.each([
    ['dropStale: "yes"', "routes.yaml: route users field dropStale: give true or false (without quotes)"],
    ["dropStale: 1", "routes.yaml: route users field dropStale: give true or false (without quotes)"],
    ["ratePerSecond: 0", "routes.yaml: route users field ratePerSecond: give a number of deliveries per second above 0 and up to 100000, e.g. 10; leave it out for no limit"],
    ["ratePerSecond: fast", "routes.yaml: route users field ratePerSecond: give a number of deliveries per second above 0 and up to 100000, e.g. 10; leave it out for no limit"],
    ["freshnessSeconds: 0", "routes.yaml: route users field freshnessSeconds: give a number of seconds above 0 and up to 86400, e.g. 5; 99% of live events delivered within this many seconds of their time; leave it out for no objective"],
    ['freshnessSeconds: "5s"', "routes.yaml: route users field freshnessSeconds: give a number of seconds above 0 and up to 86400, e.g. 5; 99% of live events delivered within this many seconds of their time; leave it out for no objective"],
    ["timeoutMs: 0", "routes.yaml: route users field timeoutMs: give a whole number of milliseconds from 1 to 300000"],
    ["timeoutMs: 2.5", "routes.yaml: route users field timeoutMs: give a whole number of milliseconds from 1 to 300000"],
    ['timeoutMs: "5000"', "routes.yaml: route users field timeoutMs: give a whole number of milliseconds from 1 to 300000"],
    ["maxAttemptsPerEvent: 0", "routes.yaml: route users field maxAttemptsPerEvent: give a whole number of attempts from 1 to 1000000; leave it out to retry for DISPATCH_RETRY_WINDOW_SECONDS"],
    ["concurrency: 1001", "routes.yaml: route users field concurrency: give a whole number of deliveries at a time from 1 to 1000"],
    ["concurrency: -1.5", "routes.yaml: route users field concurrency: give a whole number of deliveries at a time from 1 to 1000"],
    ["headers: { Expect: 100-continue }", "routes.yaml: route users field headers.Expect: Expect is set per request by the HTTP client; remove it from the route's headers"],
    ["headers: { Connection: close }", "routes.yaml: route users field headers.Connection: Connection is set per request by the HTTP client; remove it from the route's headers"],
    ['headers: { "X Key": abc }', "routes.yaml: route users field headers.X Key: is not a valid header name: use letters, digits and - (e.g. X-Api-Key)"],
    ['headers: { X-Key: "a\\nb" }', "routes.yaml: route users field headers.X-Key: has a character a header cannot carry (a line break, a control character, or one above U+00FF)"],
    ["filter: pro", 'routes.yaml: route users field filter: give a query object, e.g. {"data.object.app_metadata.plan": "pro"}'],
    ['filter: { data.object.plan: { $like: "pro%" } }', "routes.yaml: route users field filter: unknown operator $like; use $eq $ne $in $nin $exists $regex $gt $gte $lt $lte $and $or $nor $not $size $all $elemMatch"],
    ['filter: { $where: "this.type" }', "routes.yaml: route users field filter: unknown operator $where; use $eq $ne $in $nin $exists $regex $gt $gte $lt $lte $and $or $nor $not $size $all $elemMatch"],
    ["filter: { $and: { type: user.created } }", "routes.yaml: route users field filter: not a query: $and expects value to be an Array."],
    ["testEvents: keep", "routes.yaml: route users field testEvents: give deliver or drop"],
    ['transform: "{ \\"email\\": data.object.email"', 'routes.yaml: route users field transform: does not parse: Expected "}" before end of expression (S0203 at character 28)'],
    ["transform: 42", "routes.yaml: route users field transform: give a JSONata expression as text"],
  ])("when a route has %s, then the problem reads word for word", (field, message) => {
    expect(problemsOf(field)).toEqual([message]);
  });
});

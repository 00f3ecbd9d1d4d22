import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/config/config.js";
import { parseRoutes } from "../../../src/routes/load-routes.js";

describe("parseRoutes: dropStale", () => {
  it("when a route sets dropStale, then it is kept; when it does not, then the route is plain", () => {
    const routes = parseRoutes(`[{ name: crm, match: "user.*", url: "http://127.0.0.1:1/", dropStale: true }, { name: audit, match: "*", url: "http://127.0.0.1:1/" }]`, "f");
    expect(routes.map((route) => route.dropStale)).toEqual([true, undefined]);
  });

  it("when dropStale is not a boolean, then the error names the route and the field", () => {
    expect(() => parseRoutes(`[{ name: crm, match: "*", url: "http://127.0.0.1:1/", dropStale: "yes" }]`, "f")).toThrow(ConfigError);
    try {
      parseRoutes(`[{ name: crm, match: "*", url: "http://127.0.0.1:1/", dropStale: "yes" }]`, "f");
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^f: route crm field dropStale: /)]);
    }
  });
});

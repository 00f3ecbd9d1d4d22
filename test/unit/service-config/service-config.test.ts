import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/config.js";
import { parseRoutes } from "../../../src/routes/load-routes.js";
import { describeServiceConfig, publishedRoute, routeOf } from "../../../src/service-config/service-config.js";

const slackSecret = "XXXXslacksecretXXXX";
const tokenSecret = "querytokensecret";
const routes = parseRoutes(
  JSON.stringify([
    { name: "slack", match: "*", url: `https://hooks.example/services/T000/B000/${slackSecret}` },
    { name: "crm", match: "user.*", url: `https://crm.example.com:8443/hooks?token=${tokenSecret}` },
  ]),
  "routes.json",
);

describe("publishedRoute", () => {
  it("when a route URL holds a secret in its path or query, then the published configuration shows only the origin", () => {
    const published = describeServiceConfig(loadConfig({}), routes, "all");
    expect(published.routes.map(({ name, url }) => ({ name, url }))).toEqual([
      { name: "slack", url: "https://hooks.example" },
      { name: "crm", url: "https://crm.example.com:8443" },
    ]);
    for (const secret of [slackSecret, tokenSecret, "/services/", "hooks?"]) expect(JSON.stringify(published)).not.toContain(secret);
  });

  it("when two route URLs differ only in their path or query, then their fingerprints differ; the same URL gives the same fingerprint", () => {
    const [slack] = routes;
    const fingerprintOf = (url: string) => publishedRoute({ ...slack!, url }).urlFingerprint;
    expect(fingerprintOf(slack!.url)).toBe(publishedRoute(slack!).urlFingerprint);
    expect(fingerprintOf("https://hooks.example/services/T000/B000/other")).not.toBe(publishedRoute(slack!).urlFingerprint);
    expect(fingerprintOf("https://hooks.example/x?token=a")).not.toBe(fingerprintOf("https://hooks.example/x?token=b"));
    expect(fingerprintOf("https://a:1@hooks.example/x")).not.toBe(fingerprintOf("https://a:2@hooks.example/x"));
  });

  it("when a published route becomes a route to queue for, then it carries no fingerprint", () => {
    expect(routeOf(publishedRoute(routes[0]!))).not.toHaveProperty("urlFingerprint");
  });
});

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRoutes, parseRoutes, unmatchedPatternWarnings } from "../../../src/routes/load-routes.js";
import { ConfigError, loadConfig } from "../../../src/config/config.js";

function problemsOf(action: () => unknown): string[] {
  try {
    action();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("parseRoutes", () => {
  it("when a YAML file lists routes, then each gets the defaults", () => {
    const routes = parseRoutes(
      `routes:
  - name: users
    match: user.*
    url: https://users.internal/hook
    secret: whsec_a2V5
  - name: audit
    match: ["*"]
    url: http://127.0.0.1:7000/
    headers: { x-team: audit }
    concurrency: 4
`,
      "routes.yaml",
    );
    expect(routes).toEqual([
      { name: "users", match: ["user.*"], url: "https://users.internal/hook", headers: {}, secret: "whsec_a2V5", timeoutMs: 10_000, concurrency: 10 },
      { name: "audit", match: ["*"], url: "http://127.0.0.1:7000/", headers: { "x-team": "audit" }, timeoutMs: 10_000, concurrency: 4 },
    ]);
  });

  it("when the file is a JSON array, then it is read the same way", () => {
    expect(parseRoutes(`[{"name":"all","match":"*","url":"http://127.0.0.1:1/"}]`, "routes.json")).toMatchObject([{ name: "all", match: ["*"] }]);
  });

  it("when a field is wrong, then the error names the origin, the route and the field", () => {
    const problems = problemsOf(() =>
      parseRoutes(
        `- name: users
  match: user.*
  url: ftp://example.com/
- name: orgs
  match: ["organization.*"]
  url: http://127.0.0.1:1/
  timeoutMs: -5
`,
        "ROUTES_FILE r.yaml",
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^ROUTES_FILE r\.yaml: route users field url: .*http\(s\)/),
      expect.stringMatching(/^ROUTES_FILE r\.yaml: route orgs field timeoutMs: /),
    ]);
  });

  it("when a route has no name, then the error names it by position", () => {
    expect(problemsOf(() => parseRoutes(`routes: [{ match: "*", url: "http://127.0.0.1:1/" }]`, "f"))).toEqual([
      expect.stringMatching(/^f: route #1 field name: /),
    ]);
  });

  it("when a pattern is not *, a prefix or a type, then the error says what to use", () => {
    expect(problemsOf(() => parseRoutes(`[{ name: a, match: "user.*.x", url: "http://127.0.0.1:1/" }]`, "f"))).toEqual([
      expect.stringMatching(/^f: route a field match\.0: use \*, a prefix such as user\.\*/),
    ]);
  });

  it("when a route has an unknown field, then the error names the route", () => {
    expect(problemsOf(() => parseRoutes(`[{ name: a, match: "*", url: "http://127.0.0.1:1/", retries: 3 }]`, "f"))).toEqual([
      expect.stringMatching(/^f: route a: .*retries/),
    ]);
  });

  it("when two routes share a name, then the error names both by position", () => {
    const text = `[{ name: a, match: "*", url: "http://127.0.0.1:1/" }, { name: b, match: "*", url: "http://127.0.0.1:2/" }, { name: a, match: "*", url: "http://127.0.0.1:3/" }]`;
    expect(problemsOf(() => parseRoutes(text, "ROUTES_FILE r.yaml"))).toEqual([
      "ROUTES_FILE r.yaml: routes #1 and #3 are both named a; give each route its own name (it names the route's queue and metrics)",
    ]);
  });

  it("when a route has a mistyped field, then the error names the field it is close to", () => {
    expect(problemsOf(() => parseRoutes(`[{ name: a, matches: "*", url: "http://127.0.0.1:1/" }]`, "ROUTES_FILE r.yaml"))).toEqual([
      "ROUTES_FILE r.yaml: route a field match: required, and missing",
      "ROUTES_FILE r.yaml: route a: unknown field matches: did you mean match?",
    ]);
  });

  it("when a route has a field close to none, then the error lists the fields", () => {
    expect(problemsOf(() => parseRoutes(`[{ name: a, match: "*", url: "http://127.0.0.1:1/", retries: 3 }]`, "f"))).toEqual([
      "f: route a: unknown field retries; the fields are name, match, url, headers, secret, timeoutMs, maxAttemptsPerEvent, concurrency, dropStale, ratePerSecond, freshnessSeconds, liveWindowSeconds, filter, testEvents, transform",
    ]);
  });

  it("when a route sets ratePerSecond, then it is kept; a rate of 0 is refused", () => {
    expect(parseRoutes(`[{ name: a, match: "*", url: "http://127.0.0.1:1/", ratePerSecond: 2.5 }]`, "f")).toMatchObject([{ ratePerSecond: 2.5 }]);
    expect(problemsOf(() => parseRoutes(`[{ name: a, match: "*", url: "http://127.0.0.1:1/", ratePerSecond: 0 }]`, "f"))).toEqual([
      expect.stringMatching(/^f: route a field ratePerSecond: /),
    ]);
  });
});

describe("unmatchedPatternWarnings", () => {
  const routes = (match: string[]) => parseRoutes(JSON.stringify([{ name: "users", match, url: "http://127.0.0.1:1/" }]), "f");

  it("when a pattern matches no tenant event type, then the warning names the nearest one that does", () => {
    expect(unmatchedPatternWarnings(routes(["usr.*", "user.updatd", "user.created"]))).toEqual([
      "route users: match usr.* matches no event type the tenant sends: did you mean user.*?",
      "route users: match user.updatd matches no event type the tenant sends: did you mean user.updated?",
    ]);
  });

  it("when a pattern is close to nothing, then the warning says what a pattern looks like", () => {
    expect(unmatchedPatternWarnings(routes(["invoice.*"]))).toEqual([
      "route users: match invoice.* matches no event type the tenant sends; use *, an event type such as user.created, or a prefix such as user.*",
    ]);
  });

  it("when every pattern matches a tenant type, then there is no warning", () => {
    expect(unmatchedPatternWarnings(routes(["*", "user.*", "organization.member.*", "group.created"]))).toEqual([]);
  });

  it("when the text is not YAML, then the error names the origin", () => {
    expect(problemsOf(() => parseRoutes("routes: [unclosed", "ROUTES_FILE x.yaml"))).toEqual([
      expect.stringMatching(/^ROUTES_FILE x\.yaml: not valid YAML or JSON/),
    ]);
  });

  it("when a line is badly indented, then the one-line error says which line, what is wrong and how the line reads", () => {
    const text = 'routes:\n  - name: a\n    url: http://127.0.0.1:9/\n  match: ["*"]\n';
    expect(problemsOf(() => parseRoutes(text, "ROUTES_FILE x.yaml"))).toEqual([
      'ROUTES_FILE x.yaml: not valid YAML or JSON: line 4, column 1: All mapping items must start at the same column (the line reads "  match: [\\"*\\"]"); fix the indentation or brackets there',
    ]);
  });

  it("when the file is not a list of routes, then the error says routes", () => {
    expect(problemsOf(() => parseRoutes("just text", "f"))).toEqual([expect.stringMatching(/^f: routes: expected a list of routes/)]);
    expect(problemsOf(() => parseRoutes("{ routes: [], route: [] }", "f"))).toEqual(['f: unknown key route; only "routes" is allowed at the top']);
  });
});

describe("loadRoutes", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sk-routes-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("when DOWNSTREAM_URL is set, then one route named default receives every event", async () => {
    await expect(loadRoutes(loadConfig({ DOWNSTREAM_URL: "http://127.0.0.1:7000/in" }))).resolves.toEqual([
      { name: "default", match: ["*"], url: "http://127.0.0.1:7000/in", headers: {}, timeoutMs: 10_000, concurrency: 10, liveWindowSeconds: 300 },
    ]);
  });

  it("when a route sets no liveWindowSeconds, then it gets LIVE_WINDOW_SECONDS; one that sets it keeps its own", async () => {
    const file = join(dir, "windows.yaml");
    await writeFile(file, "- { name: a, match: '*', url: 'http://127.0.0.1:1/' }\n- { name: b, match: '*', url: 'http://127.0.0.1:1/', liveWindowSeconds: 60 }\n");
    await expect(loadRoutes(loadConfig({ ROUTES_FILE: file, LIVE_WINDOW_SECONDS: "900" }))).resolves.toMatchObject([{ name: "a", liveWindowSeconds: 900 }, { name: "b", liveWindowSeconds: 60 }]);
    expect(() => parseRoutes("- { name: c, match: '*', url: 'http://127.0.0.1:1/', liveWindowSeconds: 0 }", "routes.yaml")).toThrow(/route c field liveWindowSeconds: /);
  });

  it("when ROUTES_FILE is set, then the routes come from the file", async () => {
    const file = join(dir, "routes.yaml");
    await writeFile(file, "- { name: a, match: user.*, url: 'http://127.0.0.1:1/' }\n");
    await expect(loadRoutes(loadConfig({ ROUTES_FILE: file }))).resolves.toMatchObject([{ name: "a", match: ["user.*"] }]);
  });

  it("when neither is set, then there are no routes", async () => {
    await expect(loadRoutes(loadConfig({}))).resolves.toEqual([]);
  });

  it("when both are set, then the error says to choose one", async () => {
    await expect(loadRoutes(loadConfig({ ROUTES_FILE: "x", DOWNSTREAM_URL: "http://127.0.0.1:1/" }))).rejects.toThrow("set ROUTES_FILE or DOWNSTREAM_URL, not both");
  });

  it("when ROUTES_FILE cannot be read, then the error names the path", async () => {
    await expect(loadRoutes(loadConfig({ ROUTES_FILE: join(dir, "missing.yaml") }))).rejects.toThrow(/ROUTES_FILE: cannot read .*missing\.yaml \(ENOENT\); check the path/);
  });
});

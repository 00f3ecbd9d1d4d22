import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRoutes, parseRoutes } from "../../../src/routes/load-routes.js";
import { ConfigError, loadConfig } from "../../../src/config.js";

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

  it("when two routes share a name, then the error says so", () => {
    const text = `[{ name: a, match: "*", url: "http://127.0.0.1:1/" }, { name: a, match: "*", url: "http://127.0.0.1:2/" }]`;
    expect(problemsOf(() => parseRoutes(text, "f"))).toEqual([expect.stringContaining("route a: the name is used twice")]);
  });

  it("when the text is not YAML, then the error names the origin", () => {
    expect(problemsOf(() => parseRoutes("routes: [unclosed", "ROUTES_FILE x.yaml"))).toEqual([
      expect.stringMatching(/^ROUTES_FILE x\.yaml: not valid YAML or JSON/),
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
      { name: "default", match: ["*"], url: "http://127.0.0.1:7000/in", headers: {}, timeoutMs: 10_000, concurrency: 10 },
    ]);
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

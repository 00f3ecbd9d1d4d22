import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ConfigError, type Config } from "../config/config.js";
import { tenantEventTypes } from "../events/event-types.js";
import { nearestName } from "./nearest-name.js";
import { numberSchema } from "../config/number-schema.js";
import { headerFault } from "./header-fault.js";
import { routeMatches, type Route } from "./route.js";
import { compileFilter, FilterError } from "./route-filter.js";
import { compileTransform, TransformError } from "./route-transform.js";

const routeSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, "use 1-63 letters, digits, _ or -, starting with a letter or digit"),
    match: z
      .union([z.string(), z.array(z.string()).min(1)])
      .transform((value) => (Array.isArray(value) ? value : [value]))
      .pipe(z.array(z.string().regex(/^(\*|[A-Za-z0-9_.-]+(\.\*)?)$/, "use *, a prefix such as user.*, or an exact event type"))),
    url: z.url({ protocol: /^https?$/, error: "give an http(s) URL" }),
    headers: z
      .record(z.string(), z.string())
      .default({})
      .superRefine((headers, context) => {
        for (const [name, value] of Object.entries(headers)) {
          const problem = headerProblem(name, value);
          if (problem) context.addIssue({ code: "custom", message: problem, path: [name] });
        }
      }),
    secret: z.string().min(1).optional(),
    timeoutMs: numberSchema({ whole: true, min: 1, max: 300_000, unit: "milliseconds" }).default(10_000),
    maxAttemptsPerEvent: numberSchema({ whole: true, min: 1, max: 1_000_000, unit: "attempts", note: "leave it out to retry for DISPATCH_RETRY_WINDOW_SECONDS" }).optional(),
    concurrency: numberSchema({ whole: true, min: 1, max: 1000, unit: "deliveries at a time" }).default(10),
    // Absent means off; left out of parsed routes that do not set it.
    dropStale: z.boolean({ error: "give true or false (without quotes)" }).optional(),
    ratePerSecond: numberSchema({ above: 0, max: 100_000, unit: "deliveries per second", example: "10", note: "leave it out for no limit" }).optional(),
    // The route's freshness objective (docs/operating.md, "Freshness"); absent means none.
    freshnessSeconds: numberSchema({ above: 0, max: 86_400, unit: "seconds", example: "5", note: "99% of live events delivered within this many seconds of their time; leave it out for no objective" }).optional(),
    // Absent: LIVE_WINDOW_SECONDS (loadRoutes fills it in).
    liveWindowSeconds: numberSchema({ whole: true, min: 1, max: 31_536_000, unit: "seconds", example: "300", note: "events older than this when they arrive wait behind live ones; leave it out for LIVE_WINDOW_SECONDS" }).optional(),
    // Checked further once parsed (shapeProblems): the operators, and that the expression parses.
    filter: z.record(z.string(), z.unknown(), { error: 'give a query object, e.g. {"data.object.app_metadata.plan": "pro"}' }).optional(),
    testEvents: z.enum(["deliver", "drop"], { error: "give deliver or drop" }).optional(),
    transform: z.string({ error: "give a JSONata expression as text" }).min(1, "give a JSONata expression, or leave the field out to send the CloudEvent").optional(),
  })
  .strict();

/** Headers the HTTP client sets itself, per request, and refuses from a caller. */
const clientOwnedHeaders = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "expect", "host", "content-length", "te"]);

/** Why a route header cannot be sent, in our words; undefined when it can. */
function headerProblem(name: string, value: string): string | undefined {
  if (clientOwnedHeaders.has(name.toLowerCase())) return `${name} is set per request by the HTTP client; remove it from the route's headers`;
  const fault = headerFault(name, value);
  if (fault === "name") return "is not a valid header name: use letters, digits and - (e.g. X-Api-Key)";
  if (fault === "value") return "has a character a header cannot carry (a line break, a control character, or one above U+00FF)";
  return undefined;
}

/**
 * The parser's message in one line: where (line and column), what is wrong, and the line as
 * written. The parser's own message ends "at line 4, column 1:" and puts the excerpt on the
 * lines after, which a one-line error would cut.
 */
function yamlProblem(error: Error & { linePos?: Array<{ line: number; col: number }> }, text: string): string {
  const what = (error.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
  const at = error.linePos?.[0];
  if (!at) return what;
  const written = text.split(/\r?\n/)[at.line - 1];
  return `line ${at.line}, column ${at.col}: ${what}${written === undefined ? "" : ` (the line reads ${JSON.stringify(written.trimEnd())})`}; fix the indentation or brackets there`;
}

/** Parses routes from YAML or JSON text: a list of routes, or `{ routes: [...] }`. Errors name the route and the field. */
export function parseRoutes(text: string, origin: string): Route[] {
  let raw: unknown;
  try {
    raw = parseYaml(text); // YAML is a superset of JSON: one parser for both.
  } catch (error) {
    throw new ConfigError([`${origin}: not valid YAML or JSON: ${yamlProblem(error as Error & { linePos?: Array<{ line: number; col: number }> }, text)}`]);
  }
  const list = listOf(raw, origin);
  const parsed = z.array(routeSchema).safeParse(list);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const [index, ...field] = issue.path;
        if (typeof index !== "number") return `${origin}: routes: ${issue.message}`;
        const name = (list[index] as { name?: unknown } | undefined)?.name;
        const route = typeof name === "string" && name ? `route ${name}` : `route #${index + 1}`;
        if (issue.code === "unrecognized_keys") return `${origin}: ${route}: ${issue.keys.map(unknownField).join("; ")}`;
        const given = field.length === 1 ? (list[index] as Record<string, unknown> | undefined)?.[String(field[0])] : "";
        if (given === undefined) return `${origin}: ${route} field ${String(field[0])}: required, and missing`;
        return `${origin}: ${route}${field.length > 0 ? ` field ${field.join(".")}` : ""}: ${issue.message}`;
      }),
    );
  }
  const first = new Map<string, number>();
  parsed.data.forEach((route, index) => {
    const earlier = first.get(route.name);
    if (earlier !== undefined) {
      throw new ConfigError([`${origin}: routes #${earlier + 1} and #${index + 1} are both named ${route.name}; give each route its own name (it names the route's queue and metrics)`]);
    }
    first.set(route.name, index);
  });
  const problems = parsed.data.flatMap((route) => shapeProblems(route).map((problem) => `${origin}: route ${route.name} ${problem}`));
  if (problems.length > 0) throw new ConfigError(problems);
  return parsed.data;
}

/** What keeps a route's filter or transform from running, each as "field …: problem". */
function shapeProblems(route: Route): string[] {
  const problems: string[] = [];
  for (const [field, check] of [
    ["filter", () => route.filter && compileFilter(route.filter)],
    // The time bound is the dispatcher's; parsing needs none.
    ["transform", () => route.transform && compileTransform(route.transform, 1)],
  ] as const) {
    try {
      check();
    } catch (error) {
      if (!(error instanceof FilterError || error instanceof TransformError)) throw error;
      problems.push(`field ${field}: ${error.message}`);
    }
  }
  return problems;
}

const routeFields = Object.keys(routeSchema.shape);

function unknownField(key: string): string {
  const hint = nearestName(key, routeFields);
  return hint ? `unknown field ${key}: did you mean ${hint}?` : `unknown field ${key}; the fields are ${routeFields.join(", ")}`;
}

/** Every pattern that could match a tenant event type: the types, `*`, and each dotted prefix (`user.*`, `organization.member.*`). */
const knownPatterns = [
  ...new Set(tenantEventTypes.flatMap((type) => [type, ...type.split(".").slice(0, -1).map((_, index, parts) => `${parts.slice(0, index + 1).join(".")}.*`)])),
];

/**
 * A warning per `match` pattern that matches none of the tenant's event types (event-types.ts),
 * with the nearest pattern that would: a typo there silently sends a route nothing. Only a
 * warning, since events of other types are accepted too (tenant-rules.ts).
 */
export function unmatchedPatternWarnings(routes: Route[]): string[] {
  return routes.flatMap((route) =>
    route.match
      .filter((pattern) => !tenantEventTypes.some((type) => routeMatches({ ...route, match: [pattern] }, type)))
      .map((pattern) => {
        const hint = nearestName(pattern, knownPatterns);
        return `route ${route.name}: match ${pattern} matches no event type the tenant sends${hint ? `: did you mean ${hint}?` : `; use *, an event type such as user.created, or a prefix such as user.*`}`;
      }),
  );
}

function listOf(raw: unknown, origin: string): unknown[] {
  if (Array.isArray(raw)) return raw;
  if (raw && typeof raw === "object" && Array.isArray((raw as { routes?: unknown }).routes)) {
    const extra = Object.keys(raw).filter((key) => key !== "routes");
    if (extra.length > 0) throw new ConfigError([`${origin}: unknown key ${extra.join(", ")}; only "routes" is allowed at the top`]);
    return (raw as { routes: unknown[] }).routes;
  }
  throw new ConfigError([`${origin}: routes: expected a list of routes, or an object with a "routes" list`]);
}

/** Routes from ROUTES_FILE, or the DOWNSTREAM_URL shortcut (one route `default` for `*`), each with its live window (LIVE_WINDOW_SECONDS where it sets none). */
export async function loadRoutes(config: Config): Promise<Route[]> {
  const routes = await readRoutes(config);
  return routes.map((route) => ({ ...route, liveWindowSeconds: route.liveWindowSeconds ?? config.env.LIVE_WINDOW_SECONDS }));
}

async function readRoutes(config: Config): Promise<Route[]> {
  const { ROUTES_FILE, DOWNSTREAM_URL } = config.env;
  if (ROUTES_FILE && DOWNSTREAM_URL) throw new ConfigError(["set ROUTES_FILE or DOWNSTREAM_URL, not both"]);
  if (DOWNSTREAM_URL) return parseRoutes(JSON.stringify([{ name: "default", match: "*", url: DOWNSTREAM_URL }]), "DOWNSTREAM_URL");
  if (!ROUTES_FILE) return [];
  let text: string;
  try {
    text = await readFile(ROUTES_FILE, "utf8");
  } catch (error) {
    throw new ConfigError([`ROUTES_FILE: cannot read ${ROUTES_FILE} (${(error as NodeJS.ErrnoException).code}); check the path`]);
  }
  return parseRoutes(text, `ROUTES_FILE ${ROUTES_FILE}`);
}

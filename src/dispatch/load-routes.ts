import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ConfigError, type Config } from "../config.js";
import type { Route } from "./route.js";

const routeSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, "use 1-63 letters, digits, _ or -, starting with a letter or digit"),
    match: z
      .union([z.string(), z.array(z.string()).min(1)])
      .transform((value) => (Array.isArray(value) ? value : [value]))
      .pipe(z.array(z.string().regex(/^(\*|[A-Za-z0-9_.-]+(\.\*)?)$/, "use *, a prefix such as user.*, or an exact event type"))),
    url: z.url({ protocol: /^https?$/, error: "give an http(s) URL" }),
    headers: z.record(z.string(), z.string()).default({}),
    secret: z.string().min(1).optional(),
    timeoutMs: z.number().int().min(1).max(300_000).default(10_000),
    maxAttemptsPerEvent: z.number().int().min(1).max(1000).default(10),
    concurrency: z.number().int().min(1).max(1000).default(10),
  })
  .strict();

const fileSchema = z.union([z.array(routeSchema), z.object({ routes: z.array(routeSchema) }).strict().transform((file) => file.routes)]);

/** Parses routes from YAML or JSON text; errors name the route and the field. */
export function parseRoutes(text: string, origin: string): Route[] {
  let raw: unknown;
  try {
    raw = parseYaml(text); // YAML is a superset of JSON: one parser for both.
  } catch (error) {
    throw new ConfigError([`${origin}: not valid YAML or JSON: ${(error as Error).message.split("\n")[0]}`]);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const [first, index, ...field] = issue.path;
        const at = first === "routes" ? [index, ...field] : [first, index, ...field];
        const routeIndex = Number(at[0]);
        const name = Array.isArray(raw) ? raw[routeIndex]?.name : (raw as { routes?: { name?: string }[] })?.routes?.[routeIndex]?.name;
        const where = Number.isInteger(routeIndex) ? `route ${name ?? `#${routeIndex + 1}`}${at.length > 1 ? ` field ${at.slice(1).join(".")}` : ""}` : "routes";
        return `${origin}: ${where}: ${issue.message}`;
      }),
    );
  }
  const names = new Set<string>();
  for (const route of parsed.data) {
    if (names.has(route.name)) throw new ConfigError([`${origin}: route ${route.name}: the name is used twice; give each route its own name`]);
    names.add(route.name);
  }
  return parsed.data;
}

/** Routes from ROUTES_FILE, or the DOWNSTREAM_URL shortcut (one route `default` for `*`). */
export async function loadRoutes(config: Config): Promise<Route[]> {
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

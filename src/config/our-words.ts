import { z } from "zod";

/**
 * zod's messages where a schema gives none of its own, in our words: what to give, never
 * "Invalid input: expected string, received array". A schema's own message still comes
 * first. Installed once, by config.ts, which every process and command loads.
 */
export function ourWords(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      // A list where one value was expected: a query parameter given twice (?id=a&id=b), or
      // a JSON list sent where an object goes (a request body, a route of ROUTES_FILE).
      if (Array.isArray(issue.input) && issue.expected !== "array") return issue.expected === "object" ? "must be a JSON object, not a list" : "must be given once";
      return expectedAs[issue.expected] ?? `must be ${issue.expected}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((value) => String(value)).join(", ")}`;
    case "too_small":
      return `must be ${sized(issue.origin, "at least", issue.minimum)}`;
    case "too_big":
      return `must be ${sized(issue.origin, "at most", issue.maximum)}`;
    case "invalid_format":
      return issue.format === "url" ? "must be a URL such as https://host/path" : `must be a valid ${issue.format}`;
    case "unrecognized_keys":
      return `unknown ${issue.keys.length === 1 ? "field" : "fields"} ${issue.keys.join(", ")}`;
    default:
      return undefined;
  }
}

const expectedAs: Record<string, string> = {
  string: "must be text",
  number: "must be a number",
  int: "must be a whole number",
  boolean: "must be true or false",
  object: "must be a JSON object",
  array: "must be a list",
};

function sized(origin: string, bound: string, limit: number | bigint): string {
  if (origin === "string") return `${bound} ${limit} ${limit === 1 ? "character" : "characters"} long`;
  if (origin === "array" || origin === "set") return `a list of ${bound} ${limit} ${limit === 1 ? "item" : "items"}`;
  return `${bound} ${limit}`;
}

z.config({ customError: ourWords });

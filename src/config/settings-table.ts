import { z } from "zod";
import { settings } from "./config.js";

/** The README's settings table, written from config.ts so the two cannot drift apart. */
export function settingsTable(): string {
  const rows = Object.entries(settings).map(([name, [type, description]]) => {
    const parsed = (type as z.ZodType).safeParse(undefined);
    const fallback = parsed.success && parsed.data !== undefined ? `\`${String(parsed.data)}\`` : "-";
    return `| \`${name}\` | ${fallback} | ${description} |`;
  });
  return ["| name | default | meaning |", "|---|---|---|", ...rows].join("\n") + "\n";
}

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { RouteFigures } from "./route-figures.js";

export interface ChaosResult {
  /** What was done, in a few words (shown in docs/reliability.md). */
  fault: string;
  /** Events the service answered 202. */
  acknowledged: number;
  /** Further counts of the scenario (503 answers, kills, outcomes...). */
  [figure: string]: unknown;
  routes: RouteFigures[];
  durationMs: number;
}

const file = resolve(import.meta.dirname, "../../test-artifacts/chaos-results.json");

/** Prints the scenario's one-line summary and merges its figures into test-artifacts/chaos-results.json. */
export async function recordChaosResult(scenario: string, result: ChaosResult): Promise<void> {
  const routes = result.routes
    .map((route) => `${route.route}: ${route.delivered} delivered, ${route.lost} lost, ${route.repeats} repeats (bound ${route.repeatBound})`)
    .join("; ");
  const extra = Object.entries(result)
    .filter(([key]) => !["fault", "acknowledged", "routes", "durationMs"].includes(key))
    .map(([key, value]) => `${key} ${typeof value === "object" ? JSON.stringify(value) : String(value)}`)
    .join(", ");
  console.info(`chaos ${scenario}: ${result.acknowledged} acknowledged${extra ? `, ${extra}` : ""}; ${routes}; ${(result.durationMs / 1000).toFixed(1)} s`);

  await mkdir(resolve(file, ".."), { recursive: true });
  const all = (await readFile(file, "utf8").then(JSON.parse, () => ({}))) as Record<string, unknown>;
  all[scenario] = { ...result, at: new Date().toISOString() };
  // Write then rename: a scenario finishing at the same moment never reads half a file.
  const temporary = join(resolve(file, ".."), `.chaos-results-${process.pid}-${Date.now()}.json`);
  await writeFile(temporary, `${JSON.stringify(all, null, 2)}\n`);
  await rename(temporary, file);
}

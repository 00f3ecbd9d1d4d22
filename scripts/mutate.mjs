#!/usr/bin/env node
// `npm run mutate [--force] [group ...]`: StrykerJS over each mutation group (scripts/mutation-groups.mjs),
// one after the other, niced, then the mutation score per group. No names: every group.
import { spawnSync } from "node:child_process";
import console from "node:console";
import process from "node:process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { mutationGroup, mutationGroups } from "./mutation-groups.mjs";

const root = join(import.meta.dirname, "..");
// `--force`: every mutant runs again, none reused from the incremental file. Needed once
// after adding tests that should kill a static mutant (one in code that runs when a module
// loads or a factory is called): no test in particular covers it, so new tests do not
// make the incremental run try it again.
const force = process.argv.includes("--force");
const names = process.argv.slice(2).filter((argument) => argument !== "--force");
const groups = names.length > 0 ? names.map(mutationGroup) : mutationGroups;
const strykerBin = join(root, "node_modules/@stryker-mutator/core/bin/stryker.js");

const rows = [];
let failed = false;
for (const group of groups) {
  console.log(`mutate: ${group.name} (${group.mutate.join(", ")}) against ${group.tests.length} test file(s)`);
  const run = spawnSync("nice", ["-n", "15", process.execPath, strykerBin, "run", "stryker.config.mjs", ...(force ? ["--force"] : [])], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, STRYKER_GROUP: group.name, MUTATE_TESTS: group.tests.join(",") },
  });
  if (run.status !== 0) {
    failed = true;
    rows.push({ group: group.name, note: `stryker exited ${run.status ?? run.signal}` });
    continue;
  }
  rows.push({ group: group.name, ...scoreOf(join(root, "test-artifacts/mutation", group.name, "mutation.json")) });
}
console.table(rows);
process.exitCode = failed ? 1 : 0;

/** Killed (timeouts count as killed) over killed + survived + no coverage, per mutation-testing-report-schema. */
function scoreOf(file) {
  const report = JSON.parse(readFileSync(file, "utf8"));
  const counts = { Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, Ignored: 0, CompileError: 0, RuntimeError: 0 };
  for (const { mutants } of Object.values(report.files)) for (const mutant of mutants) counts[mutant.status] = (counts[mutant.status] ?? 0) + 1;
  const detected = counts.Killed + counts.Timeout;
  const valid = detected + counts.Survived + counts.NoCoverage;
  return { killed: counts.Killed, timeout: counts.Timeout, survived: counts.Survived, noCoverage: counts.NoCoverage, ignored: counts.Ignored, score: valid === 0 ? "n/a" : `${((100 * detected) / valid).toFixed(1)}%` };
}

// StrykerJS for one mutation group at a time (scripts/mutation-groups.mjs); run it through
// `npm run mutate`, which names the group in STRYKER_GROUP. docs/testing.md has the scores.
import process from "node:process";
import { mutationGroup } from "./scripts/mutation-groups.mjs";

if (!process.env.STRYKER_GROUP) throw new Error("STRYKER_GROUP is not set: run mutation testing through `npm run mutate [group ...]`, which sets it (and MUTATE_TESTS) per group");
const group = mutationGroup(process.env.STRYKER_GROUP);

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  plugins: ["@stryker-mutator/vitest-runner"],
  // Only this group's tests (vitest.mutate.config.ts reads the list) ...
  vitest: { configFile: "vitest.mutate.config.ts", related: false },
  // ... and per mutant only the tests that ran its line.
  coverageAnalysis: "perTest",
  mutate: group.mutate,
  // One mutant at a time: the machine is shared (the script also runs under nice).
  concurrency: 1,
  // A mutant that makes a test wait (a lost event) is killed by the timeout.
  timeoutMS: 20_000,
  timeoutFactor: 2,
  // Results of the last run are reused for mutants whose code and tests did not change.
  incremental: true,
  incrementalFile: `test-artifacts/mutation/${group.name}/incremental.json`,
  // Per group: two groups may run side by side without sharing a sandbox.
  tempDirName: `test-artifacts/stryker-tmp/${group.name}`,
  ignorePatterns: ["dist", "bench/results", "test-artifacts", "coverage", ".streamkeeper"],
  reporters: ["clear-text", "progress-append-only", "json", "html"],
  jsonReporter: { fileName: `test-artifacts/mutation/${group.name}/mutation.json` },
  htmlReporter: { fileName: `test-artifacts/mutation/${group.name}/mutation.html` },
  thresholds: { high: 95, low: 85, break: null },
  cleanTempDir: "always",
};

import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

/**
 * The suite's config narrowed to one mutation group's test files (scripts/mutate.mjs passes
 * them in MUTATE_TESTS, comma-separated): StrykerJS runs these for each mutant.
 */
const tests = (process.env.MUTATE_TESTS ?? "").split(",").filter(Boolean);
if (tests.length === 0) throw new Error("MUTATE_TESTS is empty: run mutation testing through `npm run mutate` (scripts/mutate.mjs), which sets it per group");

// Replaced, not merged: mergeConfig would add these to the suite's include.
// A mutant that loses a record makes a test wait for it until its poll gives up: 10 s here
// instead of the suite's 30 s (vitest.config.ts), as one mutant runs at a time; a test
// that must wait longer names its own timeout.
export default defineConfig({ ...base, test: { ...base.test, include: tests, expect: { poll: { timeout: 10_000, interval: 50 } } } });

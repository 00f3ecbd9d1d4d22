import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

/**
 * The suite's config narrowed to one mutation group's test files (scripts/mutate.mjs passes
 * them in MUTATE_TESTS, comma-separated): StrykerJS runs these for each mutant.
 */
const tests = (process.env.MUTATE_TESTS ?? "").split(",").filter(Boolean);
if (tests.length === 0) throw new Error("MUTATE_TESTS is empty: run mutation testing through `npm run mutate` (scripts/mutate.mjs), which sets it per group");

// Replaced, not merged: mergeConfig would add these to the suite's include.
export default defineConfig({ ...base, test: { ...base.test, include: tests } });

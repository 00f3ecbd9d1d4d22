import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: run test files two at a time; each file owns its queue prefix.
    maxWorkers: 2,
    fileParallelism: true,
  },
});

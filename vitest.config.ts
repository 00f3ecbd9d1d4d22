import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll gives up after 1 s by default: a delivery or a retry on a loaded 2-core
    // machine takes longer than that. Poll as often, for much longer.
    expect: { poll: { timeout: 30_000, interval: 50 } },
    // Two cores: run test files two at a time; each file owns its queue prefix.
    maxWorkers: 2,
    fileParallelism: true,
  },
});

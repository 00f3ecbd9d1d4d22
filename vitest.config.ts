import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // Safety nets, not figures a test asserts: a loaded 2-core machine (other runs beside
    // this one) can be ten times slower than a quiet one, and a test that waits on events
    // only fails at these limits when what it waits for never comes (docs/testing.md).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // expect.poll gives up after 1 s by default: a delivery or a retry on a loaded 2-core
    // machine takes longer than that. Poll as often, for much longer.
    expect: { poll: { timeout: 120_000, interval: 50 } },
    // Three test files at a time on two cores: most of a file's time is spent waiting
    // (downstream delays, outages held for seconds, the tenant's pace), so two at a time kept
    // the cores 53 % busy (a full run: 812 s of CPU in 761 s). Each file owns its queue prefix.
    maxWorkers: 3,
    fileParallelism: true,
  },
});

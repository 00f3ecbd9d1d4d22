import { afterAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { until } from "../helpers/until.js";
import { createStream, tenantEnv } from "./emulator-test-kit.js";
import { adminToken, sweepStatus } from "./sweep-test-kit.js";

const hourMs = 3_600_000;

/**
 * CONTRACT.md "The sweep": progress per stream is kept in Redis, so a restart neither skips a
 * window nor reads a finished one again. The checkpoint is watched while the first sweep
 * reads its day of lookback one window (an hour) at a time, paced to 4 list calls a second:
 * each checkpoint seen before the sweep ends is the end of a whole window read, never its
 * end in advance, and it moves window by window. Shown failing by hand in
 * src/sweep/create-sweeper.ts sweepStream: `state.advance(owner, streamId, end)` (the whole
 * sweep's end written after the first window) and the advance moved after the loop (no
 * checkpoint before the end). Not caught here: a checkpoint a constant second past each
 * window (`to + 1000`), since the test knows the sweep's end only from its last checkpoint.
 */
describe("contract: the sweep's checkpoint after each window", () => {
  let emulator: Emulator | undefined;
  let service: TestService | undefined;
  afterAll(async () => {
    await service?.close();
    await emulator?.close();
  });

  it("when the first sweep reads its lookback window by window, then the checkpoint is at the end of each window read, before the sweep ends", async () => {
    emulator = await startEmulator();
    const streamId = await createStream(emulator, "http://127.0.0.1:9/webhooks");
    service = await startTestService({
      ...tenantEnv(emulator),
      ADMIN_TOKEN: adminToken,
      RECONCILE_SWEEP_STREAMS: streamId,
      RECONCILE_SWEEP_INTERVAL_SECONDS: "3600",
      RECONCILE_RATE_PER_SECOND: "4",
      STREAM_WATCH_INTERVAL_SECONDS: "0",
    });
    const running = new Set<number>();
    const last = await until(
      "the first sweep's end",
      async () => {
        const [stream] = (await sweepStatus(service!)).streams;
        if (!stream?.checkpoint) return false;
        if (stream.lastRunAt !== null) return Date.parse(stream.checkpoint);
        running.add(Date.parse(stream.checkpoint));
        return false;
      },
      { everyMs: 20 },
    );
    // The sweep ended at `last`, having started a day (24 windows) before it; `last` itself
    // may be seen between the last window's checkpoint and the run's end being noted.
    const seen = [...running].filter((checkpoint) => checkpoint !== last).sort((a, b) => a - b);
    expect(seen.length, "checkpoints seen while the sweep ran").toBeGreaterThanOrEqual(2);
    for (const checkpoint of seen) {
      expect((last - checkpoint) % hourMs, new Date(checkpoint).toISOString()).toBe(0);
      expect(checkpoint).toBeGreaterThan(last - 24 * hourMs);
      expect(checkpoint).toBeLessThan(last);
    }
  });
});

import { afterEach, describe, expect, inject, it } from "vitest";
import { replayDeadLetters } from "../../src/dispatch/replay-dead-letters.js";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

/**
 * DISPATCH_RETRY_WINDOW_SECONDS (scaled down to 400 ms): without maxAttemptsPerEvent, a
 * delivery is retried until it still fails that long after its first failure; a replay
 * starts the window again.
 */
describe("dispatch: the retry window", () => {
  let harness: DispatchHarness | undefined;
  let downstream: SinkServer | undefined;
  afterEach(async () => {
    await harness?.close();
    await downstream?.close();
  });

  it("when a route without maxAttemptsPerEvent keeps failing, then the event is a dead letter once the window has passed, and a replay gets a new window", async () => {
    downstream = await startSinkServer(() => ({ status: 503 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("patient", downstream.url, { maxAttemptsPerEvent: undefined })]);
    harness.startDispatcher({ retryWindowMs: 400, backoffBaseMs: 20, backoffMaxMs: 50 });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });

    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(1);
    const [letter] = await collectDeadLetters(harness.queues);
    expect(letter!.failedReason).toBe("downstream answered 503; still failing 0.4 s after the first failure (DISPATCH_RETRY_WINDOW_SECONDS)");
    const first = downstream.requests.filter((request) => request.headers["webhook-id"] === event.id);
    // Retried for the whole window, not cut short by a count.
    expect(first.length).toBeGreaterThanOrEqual(2);
    expect(first.at(-1)!.receivedAt - first[0]!.receivedAt).toBeGreaterThanOrEqual(400);

    await replayDeadLetters(harness.queues, { ids: [event.id] });
    await downstream.until((requests) => requests.length > first.length);
    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(1);
    const again = downstream.requests.slice(first.length);
    expect(again.length).toBeGreaterThanOrEqual(2);
    expect(again.at(-1)!.receivedAt - again[0]!.receivedAt).toBeGreaterThanOrEqual(400);
  });
});

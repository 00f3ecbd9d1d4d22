import { afterAll, describe, expect, inject, it } from "vitest";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

/**
 * A second Ctrl-C during a slow shutdown (start-command.ts calls `hurry()`): the wait for
 * in-flight deliveries ends now, they go back to their queue, and the next worker delivers
 * them: nothing acknowledged is lost.
 */
describe("a shutdown hurried by a second signal", () => {
  let harness: DispatchHarness;
  const sinks: SinkServer[] = [];
  afterAll(async () => {
    await harness?.close();
    for (const sink of sinks) await sink.close();
  });

  it("when a delivery takes 8 s and the stop is hurried, then the stop ends before it, the job goes back, and a later worker delivers it once", async () => {
    const slow = await startSinkServer(() => ({ status: 200, delayMs: 8000 }));
    sinks.push(slow);
    const route = testRoute("slow", slow.url, { timeoutMs: 20_000 });
    harness = await createDispatchHarness(inject("redisUrl"), [route]);
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    const first = harness.startDispatcher({ shutdownTimeoutMs: 60_000 });
    await slow.untilReceived(1, 30_000);

    const stopped = first.close();
    first.hurry();
    await stopped;
    // Not waited for (unhurried, the stop would wait for the 8 s answer and complete the job):
    // the job is neither completed nor failed, but back in the queue.
    const queue = harness.queues.forRoute("slow");
    expect(await queue.getCompletedCount()).toBe(0);
    expect(await queue.getFailedCount()).toBe(0);
    expect(await queue.getJobCountByTypes("waiting", "delayed", "prioritized", "active")).toBe(1);

    // A later worker (after the restart) delivers it.
    slow.answer = () => ({ status: 200 });
    harness.startDispatcher();
    await expect.poll(() => queue.getCompletedCount(), { timeout: 60_000 }).toBe(1);
  }, 120_000);
});

import { describe, expect, it } from "vitest";
import { onScrape, queueJobs, routeWaiting } from "../../../src/metrics/registry.js";

const series = { queue: "deliver-q", state: "waiting" };

async function waitingNow(): Promise<number | undefined> {
  return (await queueJobs.get()).values.find((sample) => sample.labels.queue === series.queue)?.value;
}

describe("the scrape-time read behind streamkeeper_queue_jobs", () => {
  it("when a read is running as a job is stored, then a scrape asked for after the store waits for a read of its own and sees the job", async () => {
    let stored = 0;
    const gates: Array<() => void> = [];
    const remove = onScrape(async () => {
      const seen = stored; // what Redis holds when the read reaches it
      await new Promise<void>((open) => gates.push(open));
      queueJobs.set(series, seen);
      return true;
    });
    try {
      const earlier = waitingNow(); // the operator view's sampler, say
      await new Promise((settle) => setImmediate(settle));
      expect(gates).toHaveLength(1);
      stored = 1; // the 202 is answered here
      const scrape = waitingNow();
      gates.shift()!();
      expect(await earlier).toBe(0);
      await new Promise((settle) => setImmediate(settle));
      expect(gates).toHaveLength(1);
      gates.shift()!();
      expect(await scrape).toBe(1);
    } finally {
      remove();
    }
  });

  it("when one scrape collects several gauges at once, then they share one read", async () => {
    let reads = 0;
    const remove = onScrape(async () => {
      reads++;
      queueJobs.set(series, 3);
      routeWaiting.set({ route: "q", lane: "live" }, 3);
      return true;
    });
    try {
      const [jobs, waiting] = await Promise.all([queueJobs.get(), routeWaiting.get()]);
      expect(reads).toBe(1);
      expect(jobs.values.find((sample) => sample.labels.queue === series.queue)?.value).toBe(3);
      expect(waiting.values.find((sample) => sample.labels.route === "q")?.value).toBe(3);
    } finally {
      remove();
    }
  });
});

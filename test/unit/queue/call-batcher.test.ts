import { describe, expect, it, vi } from "vitest";
import { createCallBatcher } from "../../../src/queue/call-batcher.js";

describe("createCallBatcher", () => {
  it("when calls are made in one turn, then they are sent together at its end, in order, each answered with its own reply", async () => {
    const sent: number[][] = [];
    const double = createCallBatcher<number, number>(async (calls) => (sent.push(calls), calls.map((call) => call * 2)));
    const replies = Promise.all([1, 2, 3].map(double));
    expect(sent).toEqual([]); // nothing leaves before the turn ends
    expect(await replies).toEqual([2, 4, 6]);
    expect(sent).toEqual([[1, 2, 3]]);
    expect(await double(4)).toBe(8);
    expect(sent).toEqual([[1, 2, 3], [4]]);
  });

  it("when calls fall in several groups or exceed maxBatch, then each group is sent apart, in batches of at most maxBatch", async () => {
    const sent: string[][] = [];
    const echo = createCallBatcher<string, string>(async (calls) => (sent.push(calls), calls), { groupOf: (call) => call[0]!, maxBatch: 2 });
    expect(await Promise.all(["a1", "b1", "a2", "a3", "b2"].map(echo))).toEqual(["a1", "b1", "a2", "a3", "b2"]);
    expect(sent).toEqual([["a1", "a2"], ["a3"], ["b1", "b2"]]);
  });

  it("when one call of a batch fails on its own, then only that call rejects; when the send fails, every call of its batch rejects", async () => {
    const picky = createCallBatcher<number, number>(async (calls) => calls.map((call) => (call < 0 ? new Error(`negative: ${call}`) : call)));
    const results = await Promise.allSettled([1, -1, 2].map(picky));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe("negative: -1");

    const down = createCallBatcher<number, number>(async () => {
      throw new Error("Redis is down");
    });
    const failed = await Promise.allSettled([1, 2].map(down));
    expect(failed.map((result) => result.status === "rejected" && result.reason.message)).toEqual(["Redis is down", "Redis is down"]);
  });

  it("when the reply does not answer every call, then every call of the batch rejects rather than resolving with nothing", async () => {
    const short = createCallBatcher<number, number>(async (calls) => calls.slice(1));
    const results = await Promise.allSettled([1, 2].map(short));
    expect(results.map((result) => result.status === "rejected" && result.reason.message)).toEqual(["a batch of 2 calls got 1 replies", "a batch of 2 calls got 1 replies"]);
    const none = createCallBatcher<number, number>(async () => null as unknown as number[]);
    const unanswered = await Promise.allSettled([1, 2].map(none));
    expect(unanswered.map((result) => result.status === "rejected" && result.reason.message)).toEqual(["a batch of 2 calls got no list of replies", "a batch of 2 calls got no list of replies"]);
  });

  it("when calls are batched per turn, then their batch leaves in this turn's check phase, before an immediate queued after the calls", async () => {
    const sent: number[][] = [];
    const echo = createCallBatcher<number, number>(async (calls) => (sent.push(calls), calls));
    const replies = Promise.all([1, 2].map(echo));
    const seenAtImmediate = await new Promise<number[][]>((resolve) => setImmediate(() => resolve([...sent])));
    expect(seenAtImmediate).toEqual([[1, 2]]);
    await replies;
  });

  it("when calls are gathered over gatherMs, then those of several turns go together, a full group at once, and flush sends the rest and waits for every answer", async () => {
    vi.useFakeTimers();
    try {
      const sent: number[][] = [];
      let answer = () => {};
      const answered = new Promise<void>((resolve) => (answer = resolve));
      const slow = createCallBatcher<number, number>(async (calls) => (sent.push(calls), await answered, calls), { gatherMs: 20, maxBatch: 3 });
      const first = [slow(1), slow(2)];
      await vi.advanceTimersByTimeAsync(10); // turns pass, the batch waits
      expect(sent).toEqual([]);
      const full = [slow(3)];
      await vi.advanceTimersByTimeAsync(0);
      expect(sent).toEqual([[1, 2, 3]]); // full: sent without waiting out the time
      const later = [slow(4)];
      await vi.advanceTimersByTimeAsync(9);
      expect(sent).toEqual([[1, 2, 3]]);
      await vi.advanceTimersByTimeAsync(1);
      expect(sent).toEqual([[1, 2, 3], [4]]); // 20 ms after the first call gathered
      const last = [slow(5)];
      let flushed = false;
      const flushing = slow.flush().then(() => (flushed = true));
      await vi.advanceTimersByTimeAsync(0);
      expect(sent).toEqual([[1, 2, 3], [4], [5]]); // flush sends at once
      expect(flushed).toBe(false); // and waits for the answers of every batch sent
      answer();
      await flushing;
      expect(await Promise.all([...first, ...full, ...later, ...last])).toEqual([1, 2, 3, 4, 5]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("when a flush ends a gathering early, then a call after it waits its own gatherMs, not the rest of the time the flushed calls had", async () => {
    vi.useFakeTimers();
    try {
      const sent: number[][] = [];
      const echo = createCallBatcher<number, number>(async (calls) => (sent.push(calls), calls), { gatherMs: 20 });
      const calls = [echo(1)];
      await vi.advanceTimersByTimeAsync(10);
      calls.push(echo(2));
      await vi.advanceTimersByTimeAsync(2);
      await echo.flush();
      expect(sent).toEqual([[1, 2]]);
      await vi.advanceTimersByTimeAsync(3); // 15 ms
      calls.push(echo(3));
      await vi.advanceTimersByTimeAsync(5); // 20 ms: when the first call's time would have ended
      expect(sent).toEqual([[1, 2]]);
      await vi.advanceTimersByTimeAsync(15); // 35 ms: 20 after the call
      expect(sent).toEqual([[1, 2], [3]]);
      expect(await Promise.all(calls)).toEqual([1, 2, 3]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("when send throws at once, then every call of its batch rejects with that error, none left unanswered", async () => {
    const broken = createCallBatcher<number, number>(
      () => {
        throw new Error("not connected");
      },
      { gatherMs: 5, maxBatch: 2 },
    );
    const results = await Promise.allSettled([1, 2, 3].map(broken));
    expect(results.map((result) => result.status === "rejected" && result.reason.message)).toEqual(["not connected", "not connected", "not connected"]);
    await broken.flush();
  });
});

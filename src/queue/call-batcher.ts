/** A batched call: the call itself, and `flush()` to send what is gathered now and wait for every batch sent. */
export type CallBatcher<Call, Reply> = ((call: Call) => Promise<Reply>) & { flush(): Promise<void> };

/**
 * Gathers calls and sends them together: one request per group, at most `maxBatch` calls
 * each, instead of a request per call. Each request costs a write and a read in this
 * process and a command in Redis; a batch costs that once (docs/benchmarks.md). By default
 * the calls of one turn of the event loop, sent at its end (setImmediate); with `gatherMs`,
 * those of that many milliseconds from the first, a group sent as soon as it is full (the
 * others still at the end of that time). `send` answers each call in order, an Error for a
 * call that failed on its own.
 */
export function createCallBatcher<Call, Reply>(
  send: (calls: Call[]) => Promise<Array<Reply | Error>>,
  // 64: past a few dozen calls a batch saves little more, and one script call must not hold Redis long.
  { groupOf = () => "", maxBatch = 64, gatherMs = 0 }: { groupOf?: (call: Call) => string; maxBatch?: number; gatherMs?: number } = {},
): CallBatcher<Call, Reply> {
  type Waiting = { call: Call; resolve(reply: Reply): void; reject(error: unknown): void };
  let groups = new Map<string, Waiting[]>();
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let scheduled = false;
  const sending = new Set<Promise<void>>();
  const sendBatch = (batch: Waiting[]) => {
    const rejectAll = (error: unknown) => batch.forEach(({ reject }) => reject(error));
    // Through a promise: a `send` that threw at once still answers every call of the batch.
    const sent = Promise.resolve(batch.map(({ call }) => call))
      .then(send)
      .then((replies) => {
        // A reply of another shape would answer calls with nothing: a claim would read as a duplicate.
        if (!Array.isArray(replies) || replies.length !== batch.length) return rejectAll(new Error(`a batch of ${batch.length} calls got ${Array.isArray(replies) ? replies.length : "no list of"} replies`));
        batch.forEach(({ resolve, reject }, index) => (replies[index] instanceof Error ? reject(replies[index]) : resolve(replies[index] as Reply)));
      }, rejectAll);
    sending.add(sent);
    void sent.finally(() => sending.delete(sent));
  };
  const flushNow = () => {
    clearTimeout(timer);
    clearImmediate(immediate);
    scheduled = false;
    const due = groups;
    groups = new Map();
    for (const waiting of due.values()) {
      for (let start = 0; start < waiting.length; start += maxBatch) sendBatch(waiting.slice(start, start + maxBatch));
    }
  };
  const batched = (call: Call) =>
    new Promise<Reply>((resolve, reject) => {
      if (!scheduled) {
        scheduled = true;
        if (gatherMs > 0) timer = setTimeout(flushNow, gatherMs);
        else immediate = setImmediate(flushNow);
      }
      const group = groupOf(call);
      const waiting = groups.get(group);
      if (!waiting) groups.set(group, [{ call, resolve, reject }]);
      else {
        waiting.push({ call, resolve, reject });
        if (gatherMs > 0 && waiting.length >= maxBatch) {
          groups.delete(group);
          sendBatch(waiting);
        }
      }
    });
  return Object.assign(batched, {
    async flush() {
      flushNow();
      await Promise.all(sending);
    },
  });
}

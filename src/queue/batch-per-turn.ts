/**
 * Gathers the calls made during one turn of the event loop and sends them together at its
 * end (setImmediate): one request per group, at most `maxBatch` calls each, instead of a
 * request per call. Each request costs a write and a read in this process and a command in
 * Redis; the requests of a turn's deliveries or webhooks then cost that once (docs/benchmarks.md).
 * `send` answers each call in order, an Error for a call that failed on its own.
 */
export function createBatchPerTurn<Call, Reply>(
  send: (calls: Call[]) => Promise<Array<Reply | Error>>,
  // 64: past a few dozen calls a batch saves little more, and one script call must not hold Redis long.
  { groupOf = () => "", maxBatch = 64 }: { groupOf?: (call: Call) => string; maxBatch?: number } = {},
): (call: Call) => Promise<Reply> {
  type Waiting = { call: Call; resolve(reply: Reply): void; reject(error: unknown): void };
  let groups = new Map<string, Waiting[]>();
  const flush = () => {
    const due = groups;
    groups = new Map();
    for (const waiting of due.values()) {
      for (let start = 0; start < waiting.length; start += maxBatch) {
        const batch = waiting.slice(start, start + maxBatch);
        const rejectAll = (error: unknown) => batch.forEach(({ reject }) => reject(error));
        send(batch.map(({ call }) => call)).then((replies) => {
          // A reply of another shape would answer calls with nothing: a claim would read as a duplicate.
          if (!Array.isArray(replies) || replies.length !== batch.length) return rejectAll(new Error(`a batch of ${batch.length} calls got ${Array.isArray(replies) ? replies.length : "no list of"} replies`));
          batch.forEach(({ resolve, reject }, index) => (replies[index] instanceof Error ? reject(replies[index]) : resolve(replies[index] as Reply)));
        }, rejectAll);
      }
    }
  };
  return (call) =>
    new Promise<Reply>((resolve, reject) => {
      if (groups.size === 0) setImmediate(flush);
      const group = groupOf(call);
      const waiting = groups.get(group);
      if (waiting) waiting.push({ call, resolve, reject });
      else groups.set(group, [{ call, resolve, reject }]);
    });
}

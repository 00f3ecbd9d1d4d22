/**
 * Defers calls to the end of the event loop's turn (setImmediate) and then makes them all
 * at once, in the order they came. On a connection that pipelines what one tick issues
 * (`createRedis(..., { autoPipelining: true })`), the calls of every request and delivery
 * handled in one turn leave in one write, where each would otherwise cost a write and a
 * read of its own in this process and in Redis (docs/benchmarks.md).
 */
export function createEndOfTurn(): <T>(call: () => Promise<T>) => Promise<T> {
  let queued: Array<() => void> = [];
  const flush = () => {
    const calls = queued;
    queued = [];
    for (const call of calls) call();
  };
  return (call) =>
    new Promise((resolve, reject) => {
      if (queued.length === 0) setImmediate(flush);
      queued.push(() => void call().then(resolve, reject));
    });
}

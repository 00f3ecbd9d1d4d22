/**
 * One computation shared by every caller within `maxAgeMs` of it, and by every caller
 * while it runs: several open operator views (each polling every few seconds) cost one
 * overview per `maxAgeMs`, not one per page. A failed computation is not kept.
 */
export function shareRecent<T>(compute: () => Promise<T>, maxAgeMs: number): () => Promise<T> {
  let last: { at: number; value: T } | undefined;
  let running: Promise<T> | undefined;
  return () => {
    if (last && Date.now() - last.at < maxAgeMs) return Promise.resolve(last.value);
    running ??= compute()
      .then((value) => ((last = { at: Date.now(), value }), value))
      .finally(() => (running = undefined));
    return running;
  };
}

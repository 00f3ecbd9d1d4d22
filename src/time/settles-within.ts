import { setTimeout as sleep } from "node:timers/promises";

/**
 * Waits for `promise` to settle (fulfilled or rejected), at most `ms`: true when it did.
 * Shutdown steps use it so a Redis that never answers cannot hang a process.
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const deadline = new AbortController();
  const result = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    sleep(ms, false, { signal: deadline.signal }).catch(() => false),
  ]);
  deadline.abort();
  return result;
}

/** A check's answer: anything but `undefined`, `null` or `false` ends the wait. */
type Answer<T> = T | undefined | null | false;

export interface UntilOptions {
  /** Give up after this long: a safety net, never a figure a test asserts. @defaultValue 120000 */
  withinMs?: number;
  /** Pause between two checks. @defaultValue 100 */
  everyMs?: number;
  /** What to add to the error when it gives up (the last answer seen, a process's output). */
  detail?: () => string;
}

/**
 * Asks `check` until it answers (anything but undefined, null or false) and returns that
 * answer: a wait on an event, never a fixed sleep (docs/testing.md). A check that throws
 * ends the wait with its error. After `withinMs` (or the number given instead of options)
 * it throws an Error naming what was awaited.
 */
export async function until<T>(what: string, check: () => Answer<T> | Promise<Answer<T>>, options: UntilOptions | number = {}): Promise<T> {
  const { withinMs = 120_000, everyMs = 100, detail } = typeof options === "number" ? { withinMs: options } : options;
  const deadline = Date.now() + withinMs;
  for (;;) {
    const answer = await check();
    if (answer !== undefined && answer !== null && answer !== false) return answer;
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}${detail ? `\n${detail()}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

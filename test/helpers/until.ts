/** A check's answer: anything but `undefined`, `null` or `false` ends the wait. */
type Answer<T> = T | undefined | null | false;

export interface UntilOptions {
  /** Give up after this long: a safety net, never a figure a test asserts. @defaultValue 30000 */
  withinMs?: number;
  /** Pause between two checks. @defaultValue 100 */
  everyMs?: number;
}

/**
 * Asks `check` until it answers (anything but undefined, null or false) and returns that
 * answer; a check that throws is asked again. After `withinMs` it throws an Error that
 * says what was awaited and, when the check threw, its last error: a wait on an event,
 * never a fixed sleep (docs/testing.md).
 */
export async function until<T>(what: string, check: () => Answer<T> | Promise<Answer<T>>, { withinMs = 30_000, everyMs = 100 }: UntilOptions = {}): Promise<T> {
  const deadline = Date.now() + withinMs;
  let lastError: unknown;
  for (;;) {
    try {
      const answer = await check();
      if (answer !== undefined && answer !== null && answer !== false) return answer;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError === undefined ? "" : `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`not within ${withinMs} ms: ${what}${cause}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * A check whose answer is reused for `maxAgeMs`, and whose calls in flight are shared: the
 * public `/readyz` is unauthenticated, so however often it is called it costs Redis at most
 * one check per `maxAgeMs` (README.md#http-surfaces: "the answer may be up to 1 s old").
 */
export function rememberAnswer<T>(check: () => Promise<T>, maxAgeMs: number, now: () => number = Date.now): () => Promise<T> {
  let last: { at: number; answer: Promise<T> } | undefined;
  return () => {
    const at = now();
    if (last && at - last.at < maxAgeMs) return last.answer;
    const answer = check();
    last = { at, answer };
    // A check that throws is not remembered: the next call asks again.
    answer.catch(() => {
      if (last?.answer === answer) last = undefined;
    });
    return answer;
  };
}

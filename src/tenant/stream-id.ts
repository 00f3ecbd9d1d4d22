/**
 * A stream id: `est_` and 22 letters or digits (docs/tenant.md#identifiers). Imports
 * nothing, so config.ts can check RECONCILE_SWEEP_STREAMS with it.
 */
export const streamIdPattern = /^est_[A-Za-z0-9]{22}$/;

/**
 * The one rule for a stream id given to us (`reconcile --stream` with or without `--since`,
 * `POST /admin/reconcile`, `POST /admin/sweep/window`): undefined when `value` is one, else
 * what is wrong with it, in words that say what to give.
 */
export function streamIdProblem(value: string): string | undefined {
  if (streamIdPattern.test(value)) return undefined;
  return `must be a stream id such as est_aD5AUDqZbHFcMoEx2LxAk9 (est_ and 22 letters or digits, 26 characters), got ${JSON.stringify(value)}`;
}

/**
 * Runs each closing step in turn; every step runs even when one before it fails (the first
 * error is thrown at the end), so nothing stays open. Steps of parts a role does not run
 * are undefined and skipped.
 */
export async function closeInOrder(steps: Array<(() => Promise<unknown>) | undefined>): Promise<void> {
  let failure: unknown;
  for (const step of steps) {
    if (step) await step().catch((error: unknown) => (failure ??= error));
  }
  if (failure !== undefined) throw failure;
}

import { afterAll, afterEach } from "vitest";

type Step = () => unknown;

export interface Cleanup {
  /** Steps that undo what was just made (close, stop, remove). */
  push(...steps: Step[]): void;
  /** Runs every step, the last added first, and forgets them. */
  run(): Promise<void>;
}

/**
 * What a test made, undone after it (`"each"`) or after the file (`"all"`), newest first,
 * each step run even when one before it failed. `quiet`: a step's failure is ignored (a
 * server the test already killed); otherwise the first failure fails the hook once every
 * step has run.
 */
export function useCleanup(after: "each" | "all", options: { quiet?: boolean; timeoutMs?: number } = {}): Cleanup {
  const steps: Step[] = [];
  const cleanup: Cleanup = {
    push: (...added) => void steps.push(...added),
    async run() {
      const failures: unknown[] = [];
      for (const step of steps.splice(0).reverse()) {
        try {
          await step();
        } catch (error) {
          failures.push(error);
        }
      }
      if (failures.length > 0 && !options.quiet) throw failures[0];
    },
  };
  (after === "each" ? afterEach : afterAll)(() => cleanup.run(), options.timeoutMs);
  return cleanup;
}

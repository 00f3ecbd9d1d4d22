import { ConfigError, loadConfig } from "../../src/config/config.js";

/** The problems loadConfig names for `env`; fails the test when it accepts it. */
export function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

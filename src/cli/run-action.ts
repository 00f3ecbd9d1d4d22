import { ConfigError } from "../config/config.js";
import { CliError } from "./cli-error.js";

/**
 * Wraps a command's action: errors become one `error:` line on stderr and the exit
 * code of README.md#commands (2 for configuration and usage, 1 for everything else).
 */
export function runAction<A extends unknown[]>(action: (...args: A) => Promise<number | void>) {
  return async (...args: A): Promise<void> => {
    try {
      const code = await action(...args);
      process.exitCode = code ?? 0;
    } catch (error) {
      process.exitCode = exitCodeOf(error);
      process.stderr.write(`error: ${messageOf(error)}\n`);
    }
  };
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof ConfigError) return 2;
  return 1;
}

export function messageOf(error: unknown): string {
  if (error instanceof ConfigError) return `bad configuration: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

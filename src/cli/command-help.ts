/**
 * The part of a command's --help after its options: the settings it reads, what it
 * prints, and its exit codes (CONTRACT.md: 0 success, 1 the operation failed, 2 bad usage
 * or configuration).
 */
export function commandHelp(help: { settings: string; outcomes: string; exitCodes: string }): string {
  return [
    "",
    `Settings read: ${help.settings}`,
    `Prints: ${help.outcomes}`,
    `Exit codes: ${help.exitCodes}`,
    "Logs go to stderr only with --verbose (at LOG_LEVEL).",
  ].join("\n");
}

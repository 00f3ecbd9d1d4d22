#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { registerDemoCommand } from "./demo-command.js";
import { registerSettingsCommand } from "./settings-command.js";
import { registerStartCommand } from "./start-command.js";
import { registerReconcileCommand } from "./reconcile-command.js";
import { registerDeadLettersCommand } from "./dead-letters-command.js";
import { registerStreamsCommand } from "./streams-command.js";
import { registerTokenExchangeProfilesCommand } from "./token-exchange-profiles-command.js";
import { registerEmulatorCommand } from "./emulator-command.js";
import { registerPullCommand } from "./pull-command.js";
import { registerEventsCommand } from "./events-command.js";
import { registerReplayCommand } from "./replay-command.js";
import { registerRoutesCommand } from "./routes-command.js";
import { showLogs } from "./cli-logger.js";
import { addCommandHelp } from "./command-help.js";
import { unknownOptionsFirst } from "./unknown-options-first.js";
import { version } from "../process/version.js";

/**
 * The `streamkeeper` binary. Each command lives in its own module and registers itself;
 * usage errors exit 2 with one `error:` line, as README.md#commands fixes for every command.
 * Help goes to stdout, also when a command is given without its subcommand.
 */
const program = new Command("streamkeeper")
  .description("Durable webhook receiver for identity event streams: receive, dispatch, reconcile")
  .version(version, "-V, --version", "print the version")
  .option("--verbose", "show log lines on stderr (at LOG_LEVEL); off, a command prints only its result and one-line errors")
  .configureOutput({
    // Commander writes only help through writeErr once errors have their own writer.
    writeErr: (text) => process.stdout.write(text),
    // One line, as every error: commander puts its suggestion ("Did you mean streams?") on a line of its own.
    outputError: (text) => {
      const line = text.trim().replace(/\s*\n\s*/g, " ");
      process.stderr.write(`${line.startsWith("error:") ? line : `error: ${line}`} (run with --help for usage)\n`);
    },
  })
  .hook("preAction", (_program, command) => showLogs(Boolean(command.optsWithGlobals().verbose)))
  .exitOverride();

// A reader that stops early (`| head`) closes the pipe: the output is no longer wanted, and
// that is no error to show as a stack trace.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});

// Commands register here, one line each.
registerStartCommand(program);
registerReconcileCommand(program);
registerDeadLettersCommand(program);
registerSettingsCommand(program);
registerDemoCommand(program);
registerStreamsCommand(program);
registerTokenExchangeProfilesCommand(program);
registerEmulatorCommand(program);
registerPullCommand(program);
registerEventsCommand(program);
registerReplayCommand(program);
registerRoutesCommand(program);
addCommandHelp(program);
unknownOptionsFirst(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // `commander.help` is the help shown for a missing command or subcommand (bad usage,
    // exit 2), or asked for with `help` (commander's exit code 0).
    const done = error.code === "commander.helpDisplayed" || error.code === "commander.version" || (error.code === "commander.help" && error.exitCode === 0);
    process.exitCode = done ? 0 : 2;
  } else {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}

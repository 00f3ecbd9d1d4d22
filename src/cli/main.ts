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

/**
 * The `streamkeeper` binary. Each command lives in its own module and registers itself;
 * usage errors exit 2 with one `error:` line, as CONTRACT.md fixes for every command.
 */
const program = new Command("streamkeeper")
  .description("Durable webhook receiver for identity event streams: receive, dispatch, reconcile")
  .showHelpAfterError("(run with --help for usage)")
  .configureOutput({ outputError: (text, write) => write(text.startsWith("error:") ? text : `error: ${text}`) })
  .exitOverride();

// Commands register here, one line each.
registerStartCommand(program);
registerReconcileCommand(program);
registerDeadLettersCommand(program);
registerSettingsCommand(program);
registerDemoCommand(program);
registerStreamsCommand(program);
registerTokenExchangeProfilesCommand(program);
registerEmulatorCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    const done = error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help";
    process.exitCode = done ? 0 : 2;
  } else {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}

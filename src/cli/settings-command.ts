import type { Command } from "commander";
import { settingsTable } from "../config/settings-table.js";

export function registerSettingsCommand(program: Command) {
  program
    .command("settings")
    .description("print every setting with its default and meaning (a Markdown table)")
    .action(() => {
      process.stdout.write(settingsTable());
    });
}

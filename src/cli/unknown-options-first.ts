import type { Command, Option } from "commander";

/**
 * Commander checks required options before unknown ones, so a mistyped flag
 * (`replay --from 2h`) is reported as the missing one it stood for (`--since`). Here every
 * required option of `program`'s commands is checked after the unknown ones instead, just
 * before the action, with commander's own words and exit code (2).
 */
export function unknownOptionsFirst(program: Command): void {
  for (const command of program.commands) {
    const required: Option[] = command.options.filter((option) => option.mandatory);
    for (const option of required) option.mandatory = false;
    if (required.length > 0) {
      command.hook("preAction", (hooked, acting) => {
        if (acting !== hooked) return;
        const missing = required.find((option) => hooked.getOptionValue(option.attributeName()) === undefined);
        if (missing) hooked.error(`error: required option '${missing.flags}' not specified`, { code: "commander.missingMandatoryOptionValue", exitCode: 2 });
      });
    }
    unknownOptionsFirst(command);
  }
}

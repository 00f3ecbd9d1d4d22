import { once } from "node:events";
import type { Command } from "commander";
import { EmulatorSettingsError, emulatorSettings } from "../emulator/emulator-settings.js";
import { CliError } from "./cli-error.js";
import { runAction } from "./run-action.js";

/** `streamkeeper emulator [--port <n>]`: the local tenant emulator, until SIGINT or SIGTERM. */
export function registerEmulatorCommand(program: Command): void {
  program
    .command("emulator")
    .description("run the local tenant emulator (EMULATOR_PORT, EMULATOR_CLIENT_ID/_SECRET, EMULATOR_TIME_SCALE, EMULATOR_RATE_LIMIT, EMULATOR_RATE_LIMIT_MODE, EMULATOR_AUTO_DISABLE_AFTER)")
    .option("--port <n>", "port to listen on (default EMULATOR_PORT or 4010)")
    .action(
      runAction(async (flags: { port?: string }) => {
        let options;
        try {
          options = emulatorSettings(process.env, flags);
        } catch (error) {
          if (error instanceof EmulatorSettingsError) throw new CliError(`bad emulator setting: ${error.message}`, 2);
          throw error;
        }
        const { startEmulator } = await import("../emulator/start-emulator.js"); // only this command needs Express and the emulator
        const emulator = await startEmulator(options).catch((error: NodeJS.ErrnoException) => {
          // A port in use is a setting to change: exit 2, as `start` does (README.md#commands, exit codes).
          if (error.code === "EADDRINUSE") throw new CliError(`port ${options.port} is in use: pass another with --port or EMULATOR_PORT`, 2);
          throw error;
        });
        process.stdout.write(`emulator listening on ${emulator.url}\n`);
        const stop = new AbortController();
        await Promise.race([once(process, "SIGINT", { signal: stop.signal }), once(process, "SIGTERM", { signal: stop.signal })]);
        stop.abort();
        await emulator.close();
      }),
    );
}

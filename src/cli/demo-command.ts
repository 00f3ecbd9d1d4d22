import type { Command } from "commander";
import { loadConfig } from "../config/config.js";
import { runAction } from "./run-action.js";

export function registerDemoCommand(program: Command) {
  program
    .command("demo")
    .description("emulator + service + sample downstream, end to end: an event fails at the tenant and is recovered")
    .option("--keep-running", "keep everything running after the story, to look at metrics and the dashboard")
    .action(
      runAction(async (options: { keepRunning?: boolean }) => {
        const { runDemo } = await import("../demo/run-demo.js"); // only this command needs the emulator and the service
        const ok = await runDemo({
          keepRunning: options.keepRunning ?? false,
          redisUrl: loadConfig().env.REDIS_URL,
          say: (line) => process.stdout.write(`${line}\n`),
        });
        return ok ? 0 : 1;
      }),
    );
}

import type { Command } from "commander";
import { loadClientConfig } from "../config/config.js";
import type { PullStatus } from "../pull/pull-state.js";
import { createServiceClient } from "./service-client.js";
import { runAction } from "./run-action.js";

/** `streamkeeper pull status [--json]` (README.md#pulling-events-pull-on): GET /admin/pull of the running service. */
export function registerPullCommand(program: Command): void {
  const pull = program.command("pull").description("the pull of the tenant's event log (PULL=on)");
  pull
    .command("status")
    .description("state, kept offset's time, last event's time, last error and holding worker, from the running service")
    .option("--json", "print the answer as one JSON object")
    .action(
      runAction(async (options: { json?: boolean }) => {
        const env = loadClientConfig();
        // A refused token or an admin API that is off exits 2, as every command's (service-client.ts).
        // The text shows the newest poison event alone; --json the newest 10, raw bodies included.
        const status = await createServiceClient(env).call<PullStatus>("GET", options.json ? "/admin/pull" : "/admin/pull?poison=1");
        if (options.json) return void process.stdout.write(`${JSON.stringify(status)}\n`);
        const lines = [
          ["state", status.state],
          ["offset kept at", status.offsetAt ?? "never"],
          ["last event at", status.lastEventAt ?? "none yet"],
          ["holder", status.holder ?? "none"],
          ["last error", status.lastError ?? "none"],
          ["poison", poisonLine(status.poison)],
        ];
        process.stdout.write(lines.map(([name, value]) => `${name!.padEnd(15)}${value}`).join("\n") + "\n");
      }),
    );
}

/** How many pulled events were kept aside as poison, and the newest one's offset and reason. */
function poisonLine({ count, newest }: PullStatus["poison"]): string {
  const [last] = newest;
  if (count === 0 || !last) return "none";
  return `${count} kept aside (not JSON or not a CloudEvent); the newest at ${last.at}, offset ${last.offset ?? "none"}: ${last.reason} (pull status --json shows the newest 10 with their raw body)`;
}

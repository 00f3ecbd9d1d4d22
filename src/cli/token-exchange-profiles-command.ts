import type { Command } from "commander";
import { runAction } from "./run-action.js";
import { withTenantClient } from "./with-tenant-client.js";

/** `streamkeeper token-exchange-profiles delete <id>` (README.md#commands). */
export function registerTokenExchangeProfilesCommand(program: Command): void {
  program
    .command("token-exchange-profiles")
    .description("manage the tenant's token exchange profiles")
    .command("delete <id>")
    .description("delete a token exchange profile (succeeds also when it is already gone)")
    .action(
      runAction((id: string) =>
        withTenantClient(async (client) => {
          await client.deleteTokenExchangeProfile(id);
          process.stdout.write(`deleted token exchange profile ${id}\n`);
        }),
      ),
    );
}

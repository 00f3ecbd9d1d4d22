import type { Command } from "commander";
import type { DeadLetter } from "../admin/list-dead-letters.js";
import type { DeadLetterPage } from "../admin/page-dead-letters.js";
import type { Replayed } from "../admin/replay-dead-letters.js";
import { loadClientConfig } from "../config/config.js";
import { CliError } from "./cli-error.js";
import { formatTable } from "./format-table.js";
import { runAction } from "./run-action.js";
import { createServiceClient, noService, problemDetail } from "./service-client.js";

/**
 * `streamkeeper dead-letters list|replay` (README.md#commands, README.md#routes),
 * through the running service's admin API (GET /admin/dead-letters, POST
 * /admin/dead-letters/replay): its routes and its Redis, whatever this shell holds.
 */
export function registerDeadLettersCommand(program: Command): void {
  const deadLetters = program.command("dead-letters").description("events that failed for good on a route: list them, replay them (through the running service's admin API: ADMIN_URL, ADMIN_TOKEN)");

  deadLetters
    .command("list")
    .description("every dead letter: route, job id, event id, type, attempts, failed reason, failed at")
    .option("--json", "print one JSON array")
    .action(
      runAction(async (options: { json?: boolean }) => {
        const service = createServiceClient(loadClientConfig());
        // Printed page by page as the service answers: one JSON array, or one table per page.
        let count = 0;
        let after: string | undefined;
        do {
          const page: DeadLetterPage = await service.call("GET", `/admin/dead-letters${after === undefined ? "" : `?after=${encodeURIComponent(after)}`}`, { timeoutMs: 60_000 });
          const letters = page.deadLetters;
          if (letters.length > 0) {
            if (options.json) await write(`${count === 0 ? "[" : ","}${letters.map((letter) => JSON.stringify(letter)).join(",")}`);
            else {
              const table = tableOf(letters);
              await write(count === 0 ? table : table.slice(table.indexOf("\n") + 1));
            }
          }
          count += letters.length;
          after = page.next;
        } while (after !== undefined);
        if (options.json) return write(count === 0 ? "[]\n" : "]\n");
        if (count === 0) await write("no dead letters\n");
      }),
    );

  deadLetters
    .command("replay")
    .description("deliver dead letters again, with a fresh set of attempts")
    .argument("[job-ids...]", "<route>/<job-id>, or a bare job id (every route that has it as a dead letter)")
    .option("--all", "every dead letter of every route")
    .action(
      runAction(async (ids: string[], options: { all?: boolean }) => {
        if (options.all && ids.length > 0) throw new CliError("give job ids or --all, not both", 2);
        if (!options.all && ids.length === 0) {
          throw new CliError("give the job ids to replay (see `streamkeeper dead-letters list`) or --all", 2);
        }
        const service = createServiceClient(loadClientConfig());
        // A replay of tens of thousands takes a while: the service answers once it is done.
        const answer = await service.ask("POST", "/admin/dead-letters/replay", { body: options.all ? { all: true } : { jobIds: ids }, timeoutMs: 30 * 60_000 });
        if (!answer.reachable) throw noService(answer);
        // An id that names no dead letter: the operation failed (exit 1), nothing was replayed.
        if (answer.status === 404 && problemDetail(answer).startsWith("no dead letter")) {
          throw new CliError(problemDetail(answer).replace("GET /admin/dead-letters", "`streamkeeper dead-letters list`"));
        }
        if (answer.status !== 200) throw service.refusal(answer);
        const { replayed, jobs = [] } = answer.body as { replayed: number; jobs?: Replayed[] };
        for (const job of jobs) await write(`replayed ${job.route}/${job.jobId}\n`);
        if (replayed === 0) await write("no dead letters\n");
      }),
    );
}

function tableOf(letters: DeadLetter[]): string {
  return formatTable(
    ["ROUTE", "JOB ID", "EVENT ID", "TYPE", "ATTEMPTS", "FAILED REASON", "FAILED AT"],
    letters.map((letter) => [letter.route, letter.jobId, letter.eventId, letter.type, String(letter.attempts), letter.failedReason, letter.failedAt ?? ""]),
  );
}

/** Writes to stdout, waiting while the pipe is full, so a long listing never piles up in memory. */
function write(text: string): Promise<void> {
  return new Promise((ok, fail) => process.stdout.write(text, (error) => (error ? fail(error) : ok())));
}

import type { Command } from "commander";
import { loadConfig } from "../config.js";
import { listDeadLetters } from "../admin/list-dead-letters.js";
import { replayDeadLetters } from "../admin/replay-dead-letters.js";
import { createDeliveryQueues, type DeliveryQueues } from "../queue/delivery-queues.js";
import { createRedis, untilReady } from "../queue/redis-connection.js";
import { resolveRedis } from "../queue/resolve-redis.js";
import { CliError } from "./cli-error.js";
import { cliLogger } from "./cli-logger.js";
import { formatTable } from "./format-table.js";
import { routesForCommand } from "./routes-for-command.js";
import { runAction } from "./run-action.js";

/** `streamkeeper dead-letters list|replay` (CONTRACT.md, Commands and "Downstream delivery"). */
export function registerDeadLettersCommand(program: Command): void {
  const deadLetters = program.command("dead-letters").description("events that failed for good on a route: list them, replay them");

  deadLetters
    .command("list")
    .description("every dead letter: route, job id, event id, type, attempts, failed reason, failed at")
    .option("--json", "print one JSON array")
    .action(
      runAction((options: { json?: boolean }) =>
        withDeliveryQueues(async (queues) => {
          // Printed page by page as read (list-dead-letters.ts): one JSON array, or one table per page.
          let count = 0;
          for await (const letters of listDeadLetters(queues)) {
            if (options.json) {
              const items = letters.map((letter) => JSON.stringify(letter)).join(",");
              await write(`${count === 0 ? "[" : ","}${items}`);
            } else {
              const table = formatTable(
                ["ROUTE", "JOB ID", "EVENT ID", "TYPE", "ATTEMPTS", "FAILED REASON", "FAILED AT"],
                letters.map((letter) => [
                  letter.route, letter.jobId, letter.eventId, letter.type, String(letter.attempts), letter.failedReason, letter.failedAt ?? "",
                ]),
              );
              await write(count === 0 ? table : table.slice(table.indexOf("\n") + 1));
            }
            count += letters.length;
          }
          if (options.json) return write(count === 0 ? "[]\n" : "]\n");
          if (count === 0) await write("no dead letters\n");
        }),
      ),
    );

  deadLetters
    .command("replay")
    .description("deliver dead letters again, with a fresh set of attempts")
    .argument("[job-ids...]", "<route>/<job-id>, or a bare job id (every route that has it as a dead letter)")
    .option("--all", "every dead letter of every route")
    .action(
      runAction((ids: string[], options: { all?: boolean }) => {
        if (options.all && ids.length > 0) throw new CliError("give job ids or --all, not both", 2);
        if (!options.all && ids.length === 0) {
          throw new CliError("give the job ids to replay (see `streamkeeper dead-letters list`) or --all", 2);
        }
        return withDeliveryQueues(async (queues) => {
          const result = await replayDeadLetters(queues, options.all ? { all: true } : { ids }, ({ route, jobId }) =>
            process.stdout.write(`replayed ${route}/${jobId}\n`),
          );
          if (result.unknown.length > 0) {
            throw new CliError(
              `no dead letter with job id ${result.unknown.join(", ")}; nothing was replayed (see \`streamkeeper dead-letters list\`)`,
            );
          }
          if (result.replayed === 0) process.stdout.write("no dead letters\n");
        });
      }),
    );
}

/** Writes to stdout, waiting while the pipe is full, so a long listing never piles up in memory. */
function write(text: string): Promise<void> {
  return new Promise((ok, fail) => process.stdout.write(text, (error) => (error ? fail(error) : ok())));
}

/**
 * Connects to the service's Redis (REDIS_URL or the embedded one, QUEUE_PREFIX) and the
 * route queues of the running service (routes-for-command.ts). Logs go
 * to stderr so stdout stays clean for tables and --json.
 */
async function withDeliveryQueues(action: (queues: DeliveryQueues) => Promise<void>): Promise<void> {
  const config = loadConfig();
  const logger = cliLogger(config.env.LOG_LEVEL);
  const resolved = await resolveRedis(config, logger);
  const redis = createRedis(resolved.url, "client", "streamkeeper-cli");
  redis.on("error", () => {}); // reported by untilReady or the failing command
  let queues: DeliveryQueues | undefined;
  try {
    // Ready first: BullMQ queries the server as soon as a queue exists, and this
    // fail-fast connection has no offline queue.
    await untilReady(redis, 5000);
    const routes = await routesForCommand(config, redis);
    if (routes.length === 0) {
      throw new CliError("no routes configured: set ROUTES_FILE or DOWNSTREAM_URL as the service has them", 2);
    }
    queues = createDeliveryQueues(redis, config.env.QUEUE_PREFIX, routes, { ageSeconds: config.env.COMPLETED_JOB_RETENTION_SECONDS, count: config.env.COMPLETED_JOB_RETENTION_COUNT });
    for (const queue of queues.all()) queue.on("error", () => {}); // reported by the failing command below
    await action(queues).catch((error: unknown) => {
      if (error instanceof CliError) throw error;
      // Exit 1: a replay cut short must not look done. Lines printed so far were done.
      throw new CliError(`Redis failed during the command (${(error as Error).message}); what was printed above was done, the rest was not: run the command again once Redis answers`);
    });
  } finally {
    await queues?.close();
    redis.disconnect();
    await resolved.release();
  }
}

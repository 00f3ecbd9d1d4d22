import type { Command } from "commander";
import { loadConfig } from "../config.js";
import { listDeadLetters } from "../dispatch/list-dead-letters.js";
import { replayDeadLetters } from "../dispatch/replay-dead-letters.js";
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
          const letters = await listDeadLetters(queues);
          if (options.json) return void process.stdout.write(`${JSON.stringify(letters)}\n`);
          if (letters.length === 0) return void process.stdout.write("no dead letters\n");
          process.stdout.write(
            formatTable(
              ["ROUTE", "JOB ID", "EVENT ID", "TYPE", "ATTEMPTS", "FAILED REASON", "FAILED AT"],
              letters.map((letter) => [
                letter.route, letter.jobId, letter.eventId, letter.type, String(letter.attempts), letter.failedReason, letter.failedAt ?? "",
              ]),
            ),
          );
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
          const result = await replayDeadLetters(queues, options.all ? { all: true } : { ids });
          if (result.unknown.length > 0) {
            throw new CliError(
              `no dead letter with job id ${result.unknown.join(", ")}; nothing was replayed (see \`streamkeeper dead-letters list\`)`,
            );
          }
          for (const { route, jobId } of result.replayed) process.stdout.write(`replayed ${route}/${jobId}\n`);
          if (result.replayed.length === 0) process.stdout.write("no dead letters\n");
        });
      }),
    );
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
    await action(queues);
  } finally {
    await queues?.close();
    redis.disconnect();
    await resolved.release();
  }
}

import { readFile } from "node:fs/promises";
import { text as readStream } from "node:stream/consumers";
import { QueueEvents } from "bullmq";
import type { Command } from "commander";
import { loadConfig, requireTenant, type Config } from "../config.js";
import type { Logger } from "../logger.js";
import { createDeliveryQueues } from "../queue/delivery-queues.js";
import { createEventLedger } from "../queue/event-ledger.js";
import { createEventStore } from "../queue/event-store.js";
import { countStoredEvents } from "../metrics/count-stored-events.js";
import { routesMatching } from "../routes/route.js";
import { createFanOut } from "../queue/fan-out.js";
import { reconcileQueueBullPrefix, reconcileQueueName } from "../queue/queue-names.js";
import { closeRedis, createRedis, untilReady, type RedisClient } from "../queue/redis-connection.js";
import { resolveRedis } from "../queue/resolve-redis.js";
import { createReconcileQueue, type EnqueuedJob, type ReconcileQueueHandle } from "../reconcile/create-reconcile-queue.js";
import { createPacedTenant } from "../reconcile/create-paced-tenant.js";
import { createReconcileWorker, type ReconcileWorker } from "../reconcile/create-reconcile-worker.js";
import { parseEventIdList } from "../reconcile/parse-event-id-list.js";
import { streamIdProblem } from "../tenant/stream-id.js";
import { isFailure, type ReconcileResult } from "../reconcile/reconcile-job.js";
import { waitForOutcomes } from "../reconcile/wait-for-outcomes.js";
import { CliError } from "./cli-error.js";
import { cliLogger } from "./cli-logger.js";
import { followReconcileJobsHint } from "./follow-reconcile-jobs-hint.js";
import { refuseWhenServiceCannotReconcile } from "./refuse-when-service-cannot-reconcile.js";
import { routesForCommand } from "./routes-for-command.js";
import { isWindowMode, reconcileWindow, type WindowOptions } from "./reconcile-window.js";
import { runAction } from "./run-action.js";

interface ReconcileOptions extends Omit<WindowOptions, "stream"> {
  stream?: string[];
  file?: string;
  force?: boolean;
  /** commander's --no-wait */
  wait: boolean;
  json?: boolean;
}

/** `streamkeeper reconcile <event-id>... [--stream <id>] [--file <path>|-] [--force] [--no-wait] [--json]` (CONTRACT.md). */
export function registerReconcileCommand(program: Command): void {
  program
    .command("reconcile")
    .description("recover events whose delivery to this service failed: read the tenant's delivery history and replay the stored event")
    .argument("[event-ids...]", "event ids, e.g. evt_7PhFNYbTW8At5NiLxgUn4D")
    .option("--stream <id>", "the stream the events belong to (default: DEFAULT_STREAM_ID, else every stream is searched); with --since repeatable (default: the swept streams)", (id: string, ids: string[] = []) => [...ids, id])
    .option("--since <when>", "recover every failed delivery of a window instead of ids: a duration back from now (90m, 6h, 7d) or an ISO 8601 time")
    .option("--until <when>", "the window's end (default: now)")
    .option("--type <pattern>", "with --since: only events of this type or pattern (user.*)")
    .option("--dry-run", "with --since: print what would be recovered (would_recover, already_received, no_payload), acting on nothing")
    .option("--file <path>", "read ids from a file, one per line (- for stdin); blank lines and # comments are skipped")
    .option("--force", "replay even events this service already received")
    .option("--no-wait", "queue the ids and return; a running worker reconciles them")
    .option("--json", "print one JSON object per id")
    .action(runAction((ids: string[], options: ReconcileOptions) => (isWindowMode(options) ? reconcileWindow(ids, options) : reconcile(ids, { ...options, stream: oneStream(options.stream) }))));
}

/** By id, one stream at most. */
function oneStream(streams: string[] | undefined): string | undefined {
  if (streams && streams.length > 1) throw new CliError("give one --stream with event ids (several only with --since)", 2);
  return streams?.[0];
}

async function reconcile(args: string[], options: Omit<ReconcileOptions, "stream"> & { stream?: string }): Promise<number> {
  const eventIds = [...new Set([...args, ...(options.file === undefined ? [] : await idsFromFile(options.file))])];
  if (eventIds.length === 0) throw new CliError("give at least one event id, as arguments or with --file <path> (one id per line)", 2);
  const streamProblem = options.stream === undefined ? undefined : streamIdProblem(options.stream);
  if (streamProblem) throw new CliError(`--stream ${streamProblem}`, 2);
  const config = loadConfig();
  // stdout carries the outcomes; logs go to stderr.
  const logger = cliLogger(config.env.LOG_LEVEL);
  const redis = await resolveRedis(config, logger);
  const connection = createRedis(redis.url, "client", "streamkeeper-cli");
  connection.on("error", () => {});
  const closers: Array<() => Promise<unknown>> = [async () => connection.disconnect(), () => redis.release()];
  try {
    await untilReady(connection, 5000);
    const reconcileQueue = createReconcileQueue(connection, config.env.QUEUE_PREFIX);
    closers.unshift(() => reconcileQueue.close());
    const workers = await reconcileQueue.queue.getWorkersCount();
    if (workers > 0) await refuseWhenServiceCannotReconcile(config, connection);
    const submit = () => reconcileQueue.enqueue(eventIds, { streamId: options.stream, force: options.force });

    if (!options.wait) {
      const jobs = await submit();
      if (workers === 0) process.stderr.write("note: no worker consumes the reconcile queue now; the jobs wait until `streamkeeper start` runs\n");
      for (const job of jobs) print(options.json ? JSON.stringify({ ...job, streamId: options.stream ?? null, state: "queued" }) : `${job.eventId} queued ${job.jobId}`);
      process.stderr.write(`${followReconcileJobsHint(config)}\n`);
      return 0;
    }

    if (workers === 0) {
      // Works with or without a running service (CONTRACT.md): be the worker ourselves.
      requireTenant(config);
      const worker = await startLocalWorker(config, redis.url, connection, logger);
      closers.unshift(() => worker.close());
      process.stderr.write(`no running worker consumes the reconcile queue; reconciling in this process (at most ${config.env.RECONCILE_RATE_SHARE} of the tenant's allowance)\n`);
    }
    const eventsConnection = createRedis(redis.url, "worker", "streamkeeper-cli-events");
    eventsConnection.on("error", () => {});
    const events = new QueueEvents(reconcileQueueName, { connection: eventsConnection, prefix: reconcileQueueBullPrefix(config.env.QUEUE_PREFIX) });
    events.on("error", () => {});
    closers.unshift(async () => (await events.close(), eventsConnection.disconnect()));
    await events.waitUntilReady();
    const jobs = await submit();
    return await printOutcomes(reconcileQueue.queue, events, jobs, options);
  } finally {
    for (const close of closers) await close().catch(() => {});
  }
}

async function startLocalWorker(config: Config, redisUrl: string, connection: RedisClient, logger: Logger): Promise<ReconcileWorker> {
  const routes = await routesForCommand(config, connection);
  // Without routes a recovered event would be stored for no one, and every later run
  // would call it already_received.
  if (routes.length === 0) {
    throw new CliError("no worker runs and no downstream routes are configured here: set the service's ROUTES_FILE or DOWNSTREAM_URL for this command too, or start the service", 2);
  }
  const ledger = createEventLedger(connection, config.env.QUEUE_PREFIX, config.env.DEDUPE_TTL_SECONDS);
  const queues = createDeliveryQueues(connection, config.env.QUEUE_PREFIX, routes, { ageSeconds: config.env.COMPLETED_JOB_RETENTION_SECONDS, count: config.env.COMPLETED_JOB_RETENTION_COUNT });
  const store = countStoredEvents(createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes) }));
  const tenant = createPacedTenant({ config, redis: connection, logger });
  const workerConnection = createRedis(redisUrl, "worker", "streamkeeper-cli-reconcile");
  workerConnection.on("error", () => {});
  const worker = createReconcileWorker({ env: config.env, tenant, connection: workerConnection, ledger, store, logger });
  return { close: async () => (await worker.close(), await queues.close(), void (await closeRedis(workerConnection))) };
}

async function printOutcomes(queue: ReconcileQueueHandle, events: QueueEvents, jobs: EnqueuedJob[], options: { json?: boolean }): Promise<number> {
  const progress = createProgress(jobs.length);
  let failures = 0;
  await waitForOutcomes({
    queue,
    events,
    jobs,
    onResult(result: ReconcileResult) {
      if (isFailure(result.outcome)) failures++;
      // streamId null when no stream was named and none was searched (an id already received).
      print(options.json ? JSON.stringify({ ...result, streamId: result.streamId ?? null }) : `${result.eventId} ${result.outcome}`);
      progress.tick();
    },
  });
  progress.end();
  return failures > 0 ? 1 : 0;
}

function print(line: string) {
  process.stdout.write(`${line}\n`);
}

async function idsFromFile(path: string): Promise<string[]> {
  let text: string;
  try {
    text = path === "-" ? await readStream(process.stdin) : await readFile(path, "utf8");
  } catch (error) {
    throw new CliError(`--file ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); check the path`, 2);
  }
  try {
    return parseEventIdList(text, path === "-" ? "stdin" : path);
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
}

/**
 * "reconciled 120/10000" on stderr for lists long enough to wait on, when stderr is a
 * terminal and stdout is not (on a terminal the outcome lines are the progress).
 */
function createProgress(total: number) {
  const shown = process.stderr.isTTY && !process.stdout.isTTY && total >= 20;
  let done = 0;
  let lastDraw = 0;
  return {
    tick() {
      done++;
      if (!shown || (Date.now() - lastDraw < 200 && done < total)) return;
      lastDraw = Date.now();
      process.stderr.write(`\rreconciled ${done}/${total}`);
    },
    end() {
      if (shown && lastDraw > 0) process.stderr.write("\n");
    },
  };
}

import type { Command } from "commander";
import { loadClientConfig, tenantSettings } from "../config/config.js";
import type { EnqueuedJob } from "../reconcile/create-reconcile-queue.js";
import { parseEventIdList } from "../reconcile/parse-event-id-list.js";
import { streamIdProblem } from "../tenant/stream-id.js";
import { isFailure, type ReconcileResult } from "../reconcile/reconcile-job.js";
import { serviceLabel } from "../service-config/service-config.js";
import { CliError } from "./cli-error.js";
import { readFileOption } from "./read-file-option.js";
import { followReconcileJobsHint } from "./follow-reconcile-jobs-hint.js";
import { isWindowMode, reconcileWindow, type WindowOptions } from "./reconcile-window.js";
import { runAction } from "./run-action.js";
import { createServiceClient, type ServiceClient } from "./service-client.js";

/** Ids per POST /admin/reconcile: the most the service takes in one request. */
const maxIdsPerRequest = 10_000;

interface ReconcileOptions extends Omit<WindowOptions, "stream"> {
  stream?: string[];
  file?: string;
  force?: boolean;
  /** commander's --no-wait */
  wait: boolean;
  json?: boolean;
}

/** `streamkeeper reconcile <event-id>... [--stream <id>] [--file <path>|-] [--force] [--no-wait] [--json]` (README.md#reconcile). */
export function registerReconcileCommand(program: Command): void {
  program
    .command("reconcile")
    .description("recover events whose delivery to this service failed: read the tenant's delivery history and replay the stored event")
    .argument("[event-ids...]", "event ids, e.g. evt_7PhFNYbTW8At5NiLxgUn4D")
    .option("--stream <id>", "the stream the events belong to (default: DEFAULT_STREAM_ID, else every stream is searched); with --since repeatable (default: the swept streams)", (id: string, ids: string[] = []) => [...ids, id])
    .option("--since <when>", "recover every failed delivery of a window instead of ids: a duration back from now (90m, 6h, 7d), a date (its midnight UTC) or an ISO 8601 time")
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
  if (eventIds.length === 0) throw new CliError("give at least one event id, as arguments or with --file <path> (one id per line), or a window with --since <when> (e.g. --since 1h)", 2);
  const streamProblem = options.stream === undefined ? undefined : streamIdProblem(options.stream);
  if (streamProblem) throw new CliError(`--stream ${streamProblem}`, 2);
  const env = loadClientConfig();
  // The running service reconciles with its own tenant settings and routes (its admin API).
  const service = createServiceClient(env);
  const running = await service.config();
  if (running.role !== "receiver" && !running.tenantConfigured) {
    throw new CliError(`${serviceLabel(running)} runs the reconcile worker but has no tenant settings: set ${tenantSettings} for the service and restart it`, 2);
  }
  const jobs: EnqueuedJob[] = [];
  let workers = 0;
  for (let at = 0; at < eventIds.length; at += maxIdsPerRequest) {
    const answer = await service.call<{ jobs: EnqueuedJob[]; workers?: number }>("POST", "/admin/reconcile", {
      body: { eventIds: eventIds.slice(at, at + maxIdsPerRequest), ...(options.stream === undefined ? {} : { streamId: options.stream }), force: options.force ?? false },
      timeoutMs: 60_000,
    });
    jobs.push(...answer.jobs);
    workers = answer.workers ?? 1;
  }
  if (workers === 0) process.stderr.write(`note: no worker consumes the reconcile queue of ${serviceLabel(running)} now; the jobs wait until a worker role runs\n`);
  if (!options.wait) {
    for (const job of jobs) print(options.json ? JSON.stringify({ ...job, streamId: options.stream ?? null, outcome: "queued", state: "queued" }) : `${job.eventId} queued ${job.jobId}`);
    process.stderr.write(`${followReconcileJobsHint(env)}\n`);
    return 0;
  }
  return await printOutcomes(service, jobs, options);
}

interface JobAnswer {
  jobId: string;
  state: string;
  result?: ReconcileResult;
  /** Not done, its attempts failing so far (the tenant down): retried by the service for RECONCILE_RETRY_FOR_SECONDS. */
  retrying?: { attempts: number; reason: string };
}

/** Asks the service for the outcomes of the unfinished jobs until every one has its own, printing each as it comes. */
async function printOutcomes(service: ServiceClient, jobs: EnqueuedJob[], options: { json?: boolean }): Promise<number> {
  const progress = createProgress(jobs.length);
  const notice = createRetryNotice();
  const pending = new Map(jobs.map((job) => [job.jobId, job]));
  let failures = 0;
  let pause = 100;
  while (pending.size > 0) {
    let finished = 0;
    const retrying: Array<NonNullable<JobAnswer["retrying"]>> = [];
    for (const batch of chunks([...pending.keys()], 1000)) {
      const answer = await service.call<{ jobs: JobAnswer[] }>("POST", "/admin/reconcile/outcomes", { body: { jobIds: batch }, timeoutMs: 60_000 });
      for (const job of answer.jobs) {
        const asked = pending.get(job.jobId);
        if (!asked) continue;
        if (job.retrying && pending.has(job.jobId)) retrying.push(job.retrying);
        const result = job.result ?? (job.state === "unknown" ? { eventId: asked.eventId, outcome: "error: the service no longer knows this reconcile job; reconcile this id again" as const } : undefined);
        if (!result) continue;
        pending.delete(job.jobId);
        finished++;
        if (isFailure(result.outcome)) failures++;
        // streamId null when no stream was named and none was searched (an id already received).
        print(options.json ? JSON.stringify({ ...result, streamId: result.streamId ?? null }) : `${result.eventId} ${result.outcome}`);
        progress.tick();
      }
    }
    if (pending.size === 0) break;
    notice(retrying);
    // Quick while outcomes come, slower while they do not.
    pause = finished > 0 ? 100 : Math.min(pause * 2, 1000);
    await new Promise((ok) => setTimeout(ok, pause));
  }
  progress.end();
  return failures > 0 ? 1 : 0;
}

/**
 * While jobs wait on a failing call (the tenant down), a note on stderr: how many, the last
 * reason, and that the service retries them by itself. Said again when the reason changes,
 * else at most once a minute; the outcome lines say when they are done.
 */
function createRetryNotice() {
  let said: { reason: string; at: number } | undefined;
  return (retrying: Array<{ attempts: number; reason: string }>) => {
    if (retrying.length === 0) return void (said = undefined);
    const reason = retrying[0]!.reason;
    if (said && said.reason === reason && Date.now() - said.at < 60_000) return;
    said = { reason, at: Date.now() };
    const attempts = Math.max(...retrying.map((job) => job.attempts));
    process.stderr.write(`note: ${retrying.length} of the ids wait on a failing call (${reason}; ${attempts} attempts so far); the service retries them with backoff for up to RECONCILE_RETRY_FOR_SECONDS, nothing to do but wait\n`);
  };
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let at = 0; at < items.length; at += size) out.push(items.slice(at, at + size));
  return out;
}

function print(line: string) {
  process.stdout.write(`${line}\n`);
}

async function idsFromFile(path: string): Promise<string[]> {
  const text = await readFileOption(path);
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

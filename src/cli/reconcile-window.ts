import { loadClientConfig } from "../config/config.js";
import { isFailure, type ReconcileOutcome } from "../reconcile/reconcile-job.js";
import { createServiceClient, problemDetail } from "./service-client.js";
import { streamIdProblem } from "../tenant/stream-id.js";
import { CliError } from "./cli-error.js";
import { acceptedTimes, parseWhen } from "./parse-cli-time.js";

export interface WindowOptions {
  since?: string;
  until?: string;
  /** --stream, repeatable */
  stream?: string[];
  type?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** Whether the command asks for a window (`--since` and its companions) rather than ids. */
export function isWindowMode(options: WindowOptions): boolean {
  return options.since !== undefined || options.until !== undefined || options.type !== undefined || options.dryRun === true;
}

/**
 * `streamkeeper reconcile --since <when> [--until <when>] [--stream <id>]... [--type <pattern>]
 * [--dry-run] [--json]` (README.md#the-sweep-failed-deliveries-found-without-being-told): one window of the tenant's failed
 * deliveries, read by the running service with its own tenant settings and routes
 * (`POST /admin/sweep/window`), one line per failed delivery as the service handles it.
 */
export async function reconcileWindow(args: string[], options: WindowOptions): Promise<number> {
  if (args.length > 0) throw new CliError("give event ids or --since, not both: a window takes every failed delivery in it", 2);
  if (options.since === undefined) throw new CliError(`--since is required with --until, --type or --dry-run: ${acceptedTimes}`, 2);
  const now = Date.now();
  const since = parseWhen("--since", options.since, now);
  const until = options.until === undefined ? undefined : parseWhen("--until", options.until, now);
  for (const stream of options.stream ?? []) {
    const problem = streamIdProblem(stream);
    if (problem) throw new CliError(`--stream ${problem}`, 2);
  }
  if (since.getTime() >= (until ?? new Date(now)).getTime()) throw new CliError(`--since (${since.toISOString()}) must be before --until (${(until ?? new Date(now)).toISOString()})`, 2);
  const env = loadClientConfig();
  const service = createServiceClient(env);
  // Streamed: a long window answers line by line, so the request has no deadline.
  const opened = await service.open("POST", "/admin/sweep/window", {
    body: { since: since.toISOString(), until: until?.toISOString(), streams: options.stream, type: options.type, dryRun: options.dryRun ?? false },
  });
  if (!opened.reachable) {
    throw new CliError(`no running service answers at ${service.url} (ADMIN_URL, else ADMIN_HOST/ADMIN_PORT): start it with \`streamkeeper start\`; the window is read with the service's own tenant settings`, 1);
  }
  const { response } = opened;
  if (response.status !== 200) {
    const answer = { url: service.url, status: response.status, body: await response.json().catch(() => undefined) };
    const detail = problemDetail(answer);
    if (response.status === 401 || response.status === 403) throw service.refusal(answer);
    throw new CliError(detail, response.status === 400 || response.status === 409 || response.status === 404 ? 2 : 1);
  }

  let failures = 0;
  for await (const line of lines(response)) {
    const value = JSON.parse(line) as { eventId?: string; streamId?: string; outcome?: string; done?: boolean; error?: string; streams?: string[]; pages?: number; unlisted?: Array<{ streamId: string; from: string; to: string; reason: string }> };
    if (value.error !== undefined) throw new CliError(`the window was not read to its end: ${value.error}; run the command again`, 1);
    if (value.done) {
      process.stderr.write(`read ${value.streams?.length ?? 0} stream(s) from ${since.toISOString()} to ${(until ?? new Date(now)).toISOString()} in ${value.pages ?? 0} list call(s)\n`);
      for (const span of value.unlisted ?? []) process.stderr.write(`note: stream ${span.streamId}, ${span.from} to ${span.to}: ${span.reason}\n`);
      failures += value.unlisted?.length ?? 0;
      continue;
    }
    const outcome = value.outcome as ReconcileOutcome;
    if (options.dryRun ? outcome.startsWith("error:") : isFailure(outcome)) failures++;
    process.stdout.write(`${options.json ? JSON.stringify(value) : `${value.eventId} ${outcome}`}\n`);
  }
  return failures > 0 ? 1 : 0;
}

async function* lines(response: Response): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) yield line;
    }
  }
  if (buffered.trim()) yield buffered.trim();
}

/**
 * The tenant's side of a chaos scenario, in a process of its own so a fault in the
 * service's process (or a busy event loop there) cannot slow the load down or hide a
 * lost answer:
 *
 *   node --import tsx test/chaos/load-driver.ts '<LoadDriverOptions as JSON>'
 *
 * It POSTs one real-shaped event per request, each with a fresh id, at a bounded rate
 * for a bounded time, and retries an event answered 503 (or not answered) the way the
 * tenant does: 4 attempts in all, after about 1, 2 and 4 s (docs/tenant.md#webhook-delivery). It prints `progress <json>` lines while it runs and writes a LoadResult
 * to `outFile`, then prints `done`.
 */
import { writeFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { userEvent } from "../helpers/fixtures.js";

export interface LoadDriverOptions {
  /** The webhook URL, e.g. `http://127.0.0.1:<port>/webhooks`. */
  url: string;
  authorization: string;
  ratePerSecond: number;
  durationMs: number;
  /** Waits before attempts 2, 3, 4 (the tenant: 1000, 2000, 4000). */
  retryDelaysMs: number[];
  /** At most this many requests open at once; the schedule slips rather than pile up. */
  maxInFlight: number;
  /** A request without an answer by then counts as failed (the tenant times out too). */
  requestTimeoutMs: number;
  outFile: string;
}

export interface LoadResult {
  /** Events sent (each with its own id). */
  events: number;
  /** Ids answered 202, at the first attempt or a retry. */
  acknowledged: string[];
  /** Ids answered 503 or not answered at every attempt: the tenant marks them failed (a reconcile recovers them). */
  gaveUp: string[];
  /** Ids answered anything else: never expected of a healthy receiver for valid events. */
  refused: Array<{ id: string; status: number; body: string }>;
  /** Answers per status over every attempt; `0` means no answer (refused connection, timeout). */
  answers: Record<string, number>;
  /** Events that needed more than one attempt. */
  retried: number;
  /** Events answered 202 at a retry, after a 503 or no answer. */
  acknowledgedOnRetry: number;
  durationMs: number;
}

export interface LoadProgress {
  events: number;
  acknowledged: number;
  unavailable: number;
  inFlight: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as LoadDriverOptions;
const result: LoadResult = { events: 0, acknowledged: [], gaveUp: [], refused: [], answers: {}, retried: 0, acknowledgedOnRetry: 0, durationMs: 0 };
let inFlight = 0;
let unavailable = 0;

async function attempt(body: string): Promise<{ status: number; text: string }> {
  try {
    const response = await fetch(options.url, {
      method: "POST",
      body,
      headers: { authorization: options.authorization, "content-type": "application/json" },
      signal: AbortSignal.timeout(options.requestTimeoutMs),
    });
    return { status: response.status, text: await response.text() };
  } catch {
    return { status: 0, text: "" };
  }
}

/** One event through up to 1 + retryDelaysMs.length attempts. */
async function deliver(): Promise<void> {
  const event = userEvent();
  const body = JSON.stringify(event);
  result.events++;
  inFlight++;
  try {
    for (let index = 0; ; index++) {
      const { status, text } = await attempt(body);
      result.answers[status] = (result.answers[status] ?? 0) + 1;
      if (index === 1) result.retried++;
      if (status === 202 && index > 0) result.acknowledgedOnRetry++;
      if (status === 202) return void result.acknowledged.push(event.id);
      if (status !== 503 && status !== 0) return void result.refused.push({ id: event.id, status, body: text.slice(0, 300) });
      unavailable++;
      const wait = options.retryDelaysMs[index];
      if (wait === undefined) return void result.gaveUp.push(event.id);
      await sleep(wait);
    }
  } finally {
    inFlight--;
  }
}

const started = Date.now();
const progress = setInterval(() => {
  const line: LoadProgress = { events: result.events, acknowledged: result.acknowledged.length, unavailable, inFlight };
  process.stdout.write(`progress ${JSON.stringify(line)}\n`);
}, 200);

const total = Math.floor((options.ratePerSecond * options.durationMs) / 1000);
const pending: Promise<void>[] = [];
for (let index = 0; index < total; index++) {
  const due = started + (index * 1000) / options.ratePerSecond;
  if (due > Date.now()) await sleep(due - Date.now());
  // Bounded in-flight: under a fault the schedule slips instead of opening ever more sockets.
  while (inFlight >= options.maxInFlight) await sleep(5);
  pending.push(deliver());
}
await Promise.all(pending);
clearInterval(progress);
result.durationMs = Date.now() - started;
await writeFile(options.outFile, JSON.stringify(result));
process.stdout.write("done\n");

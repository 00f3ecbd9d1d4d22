import { createServer, type ServerResponse } from "node:http";
import { wallClockMs } from "../lib/event-source.js";
import { percentile, round } from "../lib/percentile.js";
import { serveBenchProcess } from "../lib/serve-bench-process.js";

/** What `GET /_bench/stats` answers. */
export interface SinkStats {
  /** every delivery request so far */
  received: number;
  /** distinct event ids so far */
  unique: number;
  /** deliveries of an id already seen (at least once delivery allows them) */
  repeats: number;
  /** since the last `POST /_bench/mark`: */
  window: {
    unique: number;
    /** wall-clock ms of the first and last delivery of a new id */
    firstAt?: number;
    lastAt?: number;
    /** sink receive time minus the send time carried in the event, new ids only */
    latencyMs: { p50?: number; p99?: number; max?: number };
    /** new ids that carried a send time (those `latencyMs` covers) */
    timed: number;
  };
}

/**
 * The downstream of the pipeline runs: a plain node:http server in its own process that
 * answers 200 at once and counts distinct event ids (`webhook-id`, README.md#routes), so the
 * run can prove nothing acknowledged was lost. End-to-end latency is its receive time
 * minus `data.context.bench_sent_at`, which the load generator stamps on each event.
 * `POST /_bench/mark` starts a new window; `POST /_bench/reset` also forgets every id.
 * A delivery to a path with `?delayMs=<n>` is answered, and counted, after n ms: a
 * downstream that takes its time (the flood scenario, bench/scenarios/run-flood.ts).
 */
const seen = new Set<string>();
let received = 0;
let repeats = 0;
let window = { unique: 0, firstAt: undefined as number | undefined, lastAt: undefined as number | undefined, latencies: [] as number[] };

const server = createServer((req, res) => {
  if (req.url === "/_bench/stats") {
    const { latencies, ...rest } = window;
    const stats: SinkStats = {
      received,
      unique: seen.size,
      repeats,
      window: { ...rest, latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(percentile(latencies, 100)) }, timed: latencies.length },
    };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(stats));
    return;
  }
  if (req.url === "/_bench/mark" || req.url === "/_bench/reset") {
    if (req.url === "/_bench/reset") {
      seen.clear();
      received = 0;
      repeats = 0;
    }
    window = { unique: 0, firstAt: undefined, lastAt: undefined, latencies: [] };
    req.resume();
    res.writeHead(204).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    // A slow downstream counts its own time: the delivery ends with its answer.
    const delayMs = Number(/[?&]delayMs=(\d+)/.exec(req.url ?? "")?.[1] ?? 0);
    if (delayMs > 0) setTimeout(() => answer(req.headers["webhook-id"], chunks, res), delayMs);
    else answer(req.headers["webhook-id"], chunks, res);
  });
});

function answer(id: string | string[] | undefined, chunks: Buffer[], res: ServerResponse): void {
  const now = wallClockMs();
  received += 1;
  if (typeof id === "string" && !seen.has(id)) {
    seen.add(id);
    window.unique += 1;
    window.firstAt ??= now;
    window.lastAt = now;
    const sentAt = sentAtOf(Buffer.concat(chunks).toString("utf8"));
    if (sentAt !== undefined) window.latencies.push(now - sentAt);
  } else {
    repeats += 1;
  }
  res.writeHead(200).end();
}

function sentAtOf(body: string): number | undefined {
  try {
    const value = (JSON.parse(body) as { data?: { context?: { bench_sent_at?: unknown } } }).data?.context?.bench_sent_at;
    return typeof value === "number" ? value : undefined;
  } catch {
    return undefined;
  }
}

serveBenchProcess(server);

import { createServer } from "node:http";
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
  };
}

/**
 * The downstream of the pipeline runs: a plain node:http server in its own process that
 * answers 200 at once and counts distinct event ids (`webhook-id`, README.md#routes), so the
 * run can prove nothing acknowledged was lost. End-to-end latency is its receive time
 * minus `data.context.bench_sent_at`, which the load generator stamps on each event.
 * `POST /_bench/mark` starts a new window; `POST /_bench/reset` also forgets every id.
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
      window: { ...rest, latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(percentile(latencies, 100)) } },
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
    const now = wallClockMs();
    received += 1;
    const id = req.headers["webhook-id"];
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
  });
});

function sentAtOf(body: string): number | undefined {
  try {
    const value = (JSON.parse(body) as { data?: { context?: { bench_sent_at?: unknown } } }).data?.context?.bench_sent_at;
    return typeof value === "number" ? value : undefined;
  } catch {
    return undefined;
  }
}

serveBenchProcess(server);

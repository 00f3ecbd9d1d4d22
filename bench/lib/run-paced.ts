import { Agent, request } from "node:http";
import { startCpuMeter } from "./cpu-usage.js";
import { createEventSource } from "./event-source.js";
import type { LoadOptions, LoadResult } from "./load-types.js";
import { percentile, round } from "./percentile.js";
import { headersFor, summarize } from "./run-autocannon.js";

/**
 * A fixed rate with even spacing: request i is due at start + i/rate, sent over a
 * keep-alive pool of `connections` sockets. Latency counts from the due time, so a
 * server that falls behind is charged for the requests it kept waiting (no coordinated
 * omission), and the send time stamped in each event is its due time too.
 */
export async function runPaced(options: LoadOptions): Promise<LoadResult> {
  const rate = options.overallRate;
  if (!rate) throw new Error("a paced run needs overallRate");
  const source = createEventSource();
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const url = new URL(options.url);
  const headers = headersFor(options);
  const latencies: number[] = [];
  const lags: number[] = [];
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let failures = 0;
  let inFlight = 0;
  let sent = 0;
  const total = Math.round(rate * options.durationS);
  const startedAt = Date.now();
  const meter = startCpuMeter({ load: process.pid, ...options.watch });
  const start = performance.now();
  const wallStart = performance.timeOrigin + start;
  let allAnswered!: () => void;
  const answered = new Promise<void>((resolve) => (allAnswered = resolve));

  const send = (index: number) => {
    const dueAt = start + (index * 1000) / rate;
    const events = Array.from({ length: options.batchSize }, () => source.event(options.streamId, wallStart + (index * 1000) / rate));
    const body = JSON.stringify(options.batchSize > 1 ? events : events[0]);
    inFlight += 1;
    lags.push(performance.now() - dueAt);
    const done = () => {
      inFlight -= 1;
      if (sent === total && inFlight === 0) allAnswered();
    };
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          statusCodes[status] = (statusCodes[status] ?? 0) + 1;
          if (status >= 200 && status < 300) {
            ok += 1;
            latencies.push(performance.now() - dueAt);
          }
          done();
        });
      },
    );
    req.on("error", () => {
      failures += 1;
      done();
    });
    req.end(body);
  };

  // Each tick sends every request that has come due; timers fire about once a millisecond.
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
      while (sent < due) send(sent++);
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  // Answers still missing after 30 s count as not acknowledged; unref'd, so the process can exit at once.
  if (inFlight > 0) await Promise.race([answered, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
  const finishedAt = Date.now();
  const cores = meter.read();
  agent.destroy();
  const result = summarize({ generator: "paced", options, durationS: (performance.now() - start) / 1000, statusCodes, ok, failures, latencies, startedAt, finishedAt, cores });
  return { ...result, sendLagMs: { p50: round(percentile(lags, 50)), p99: round(percentile(lags, 99)), max: round(percentile(lags, 100)) } };
}

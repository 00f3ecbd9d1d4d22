import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Redis } from "ioredis";
import { deliveryQueueBullPrefix } from "../../src/queue/queue-names.js";
import type { BenchSettings } from "../bench-settings.js";
import { createEventSource } from "../lib/event-source.js";
import { benchAuthorization, startServiceProcess } from "../lib/start-service-process.js";

export interface OutageResults {
  events: number;
  outageSeconds: number;
  /** requests the downstream got while it answered 503 */
  requestsDuringOutage: number;
  /** from the downstream answering again to its first and its last new delivery */
  recoveryToFirstDeliverySeconds: number;
  recoveryToLastDeliverySeconds: number;
  delivered: number;
  deadLetters: number;
}

export interface OutageContext {
  settings: BenchSettings;
  redis: Redis;
  redisUrl: string;
  dataDir: string;
  log(message: string): void;
}

/**
 * A downstream outage: one `--role all` process with the default retry and
 * circuit settings, a downstream that answers 503 for BENCH_OUTAGE_S while events keep
 * arriving at BENCH_OUTAGE_RATE per second, then 200 again. Measures how many requests
 * the downstream got during its outage (the circuit's probes, against one per event and
 * retry without it), and how long after it came back the last event arrived.
 */
export async function runOutage(context: OutageContext): Promise<OutageResults> {
  const { settings, log } = context;
  let down = true;
  let requestsDuringOutage = 0;
  const delivered = new Map<string, number>();
  const sink = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (down) {
        requestsDuringOutage++;
        return void res.writeHead(503).end();
      }
      const id = String(req.headers["webhook-id"]);
      if (!delivered.has(id)) delivered.set(id, Date.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((ok) => sink.listen(0, "127.0.0.1", ok));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`;

  await context.redis.flushall();
  const service = await startServiceProcess({ role: "all", redisUrl: context.redisUrl, queuePrefix: "bench-outage", dataDir: context.dataDir, env: { DOWNSTREAM_URL: sinkUrl } });
  try {
    const source = createEventSource();
    const events = Math.round(settings.BENCH_OUTAGE_S * settings.BENCH_OUTAGE_RATE);
    log(`outage: ${events} events over ${settings.BENCH_OUTAGE_S} s while the downstream answers 503`);
    const started = Date.now();
    for (let sent = 0; sent < events; sent++) {
      // Evenly paced: the sleep before each event catches up with the schedule.
      const due = started + (sent * 1000) / settings.BENCH_OUTAGE_RATE;
      if (due > Date.now()) await new Promise((ok) => setTimeout(ok, due - Date.now()));
      const answer = await fetch(`${service.publicUrl}/webhooks`, {
        method: "POST",
        body: JSON.stringify(source.event("est_38ANnv8pQhqsZrX2VFbftv")),
        headers: { authorization: benchAuthorization, "content-type": "application/json" },
      });
      if (answer.status !== 202) throw new Error(`outage: the service answered ${answer.status} to an event`);
    }
    down = false;
    const recoveredAt = Date.now();
    const outageSeconds = (recoveredAt - started) / 1000;
    log(`outage: the downstream is back after ${outageSeconds.toFixed(1)} s (${requestsDuringOutage} requests during the outage); waiting for every event`);
    const deadline = recoveredAt + settings.BENCH_DRAIN_TIMEOUT_S * 1000 + 300_000;
    while (delivered.size < events && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 100));
    const times = [...delivered.values()];
    const deadLetters = Number(await context.redis.zcard(`${deliveryQueueBullPrefix("bench-outage", "default")}:deliver-default:failed`));
    return {
      events,
      outageSeconds,
      requestsDuringOutage,
      recoveryToFirstDeliverySeconds: (Math.min(...times) - recoveredAt) / 1000,
      recoveryToLastDeliverySeconds: (Math.max(...times) - recoveredAt) / 1000,
      delivered: delivered.size,
      deadLetters,
    };
  } finally {
    await service.stop();
    sink.close();
    sink.closeAllConnections();
  }
}

import type { Cluster, Redis } from "ioredis";
import type { Logger } from "../logging/logger.js";
import { freshnessMinuteKey, minuteKeyTtlMs } from "./freshness-keys.js";

export interface WaitingSamplerDeps {
  redis: Redis | Cluster;
  queuePrefix: string;
  logger: Logger;
  /** Route name → events waiting for it now (queued, recoveries and replays, retrying; not in flight). */
  read(): Promise<Map<string, number>>;
  /** @defaultValue 10000 */
  everyMs?: number;
}

/**
 * Samples each route's waiting events into the freshness sketch's minute hash (field
 * `<route>|w`, freshness-keys.ts), for the operator view's last-hour charts: one HSET per
 * route every 10 s, the last sample of a minute standing for it. Every process samples the
 * same queues, so whichever writes last is as right as the others. A sample Redis does not
 * take is skipped: the chart shows a gap, and the queue gauges have the figure.
 */
export function startWaitingSampler({ redis, queuePrefix, logger, read, everyMs = 10_000 }: WaitingSamplerDeps): { close(): Promise<void> } {
  const sample = async () => {
    try {
      const waiting = await read();
      if (waiting.size === 0) return;
      const key = freshnessMinuteKey(queuePrefix, Math.floor(Date.now() / 60_000));
      const pipeline = redis.pipeline();
      for (const [route, count] of waiting) pipeline.hset(key, `${route}|w`, count);
      await pipeline.pexpire(key, minuteKeyTtlMs).exec();
    } catch (error) {
      logger.debug({ err: error }, "waiting counts not sampled for the operator view's charts; tried again in 10 s");
    }
  };
  let sampling: Promise<void> | undefined;
  const run = () => void (sampling ??= sample().finally(() => (sampling = undefined)));
  run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await sampling;
    },
  };
}

import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "../logging/logger.js";
import type { RedisClient } from "../redis/redis-connection.js";
import { settlesWithin } from "../time/settles-within.js";

/** The part of a BullMQ worker a shutdown uses. */
export interface StoppableWorker {
  close(): Promise<void>;
  disconnect(): Promise<void>;
  once(event: "closing", listener: (message: string) => void): unknown;
}

export interface CloseWorkersOptions {
  workers: StoppableWorker[];
  /** Jobs whose processor is running (in-flight.ts). */
  running(): number;
  /**
   * Of those, the work that can end while Redis is away (deliveries: requests sent to a
   * downstream and not yet answered). A job waiting on Redis itself cannot end before it
   * answers, so it is not waited for while Redis is away.
   */
  runningWithoutRedis(): number;
  /** The workers' shared connection: while it is not ready, Redis does not answer them. */
  connection: RedisClient;
  /** SHUTDOWN_TIMEOUT_MS: the longest wait for work still running. */
  timeoutMs: number;
  /** Aborted by a second signal: the wait ends now. */
  cutShort?: AbortSignal;
  /** Who stops, for the log: "the dispatcher", "the reconcile worker". */
  name: string;
  /** Plural noun of a unit of work, for the log: "deliveries", "reconcile jobs". */
  what: string;
  /** What happens to work cut short while Redis answers, for the log. */
  cutWorkGoes: string;
  /** Ends the work still running (its jobs go back to their queue); none: it is left to its lock. */
  abortRunning?: () => void;
  logger: Logger;
}

/** How often the wait looks whether only Redis is left to wait for. */
const lookEveryMs = 50;
/** How long Redis must stay away before the stop gives up on it: a reconnect (a failover, a blip) is waited out. */
export const redisAwayGraceMs = 1000;

/**
 * Stops BullMQ workers, waiting for what is actually running and nothing else: work in
 * flight gets up to `timeoutMs` (less after a second signal); once none is left that can
 * end without Redis and Redis does not answer, the workers are dropped at once, since what
 * is left of their close (recording outcomes, ending blocking reads) needs Redis. A job whose
 * outcome could not be recorded is taken up again once its lock expires (docs/operating.md,
 * Stopping the service). Lines logged state counts measured at that moment. Resolves true
 * when the workers closed cleanly.
 */
export async function closeWorkers(options: CloseWorkersOptions): Promise<boolean> {
  const { workers, logger, what } = options;
  const redisAway = () => options.connection.status !== "ready";
  // A worker stops fetching once it says "closing" and its blocking read is ended (in the
  // same turn): work cut before that goes back to the queue where this very worker would
  // fetch it again, and the stop would wait for that repeat.
  const stoppedFetching = Promise.all(workers.map((worker) => new Promise<void>((ok) => worker.once("closing", () => setImmediate(ok)))));
  const graceful = Promise.all(workers.map((worker) => worker.close())).then(
    () => "closed" as const,
    () => "closed" as const,
  );
  const stop = new AbortController();
  // Redis has not answered for redisAwayGraceMs and nothing left could end without it:
  // nothing worth waiting for. A shorter absence (a reconnect) leaves the work waiting on
  // Redis (a delivered job's completion and mark) to finish.
  const onlyRedisLeft = async () => {
    let awaySince: number | undefined;
    while (!stop.signal.aborted) {
      if (!redisAway() || options.runningWithoutRedis() > 0) awaySince = undefined;
      else if (Date.now() - (awaySince ??= Date.now()) >= redisAwayGraceMs) break;
      await sleep(lookEveryMs, undefined, { signal: stop.signal }).catch(() => {});
    }
    return "redis away" as const;
  };
  const deadline = (ms: number) => sleep(ms, "deadline" as const, { signal: stop.signal }).catch(() => "deadline" as const);
  const cutShort = new Promise<"cut short">((ok) => {
    if (options.cutShort?.aborted) return ok("cut short");
    options.cutShort?.addEventListener("abort", () => ok("cut short"), { once: true });
  });
  try {
    let how = await Promise.race([graceful, onlyRedisLeft(), deadline(options.timeoutMs), cutShort]);
    if (how === "closed") return true;
    if (how === "deadline" || how === "cut short") {
      const away = redisAway();
      const running = away ? options.runningWithoutRedis() : options.running();
      if (running > 0) {
        const when = how === "cut short" ? "stopping now (a second signal)" : `shutdown deadline (SHUTDOWN_TIMEOUT_MS=${options.timeoutMs})`;
        const goes = away ? "Redis does not answer, so they are taken up again once their lock expires" : options.cutWorkGoes;
        logger.warn({ running }, `${when}: ${running} ${what} still running; ${goes}`);
      }
      await Promise.race([stoppedFetching, graceful]);
      options.abortRunning?.();
      // What remains of the close is Redis round trips and the work just cut: briefly.
      how = await Promise.race([graceful, onlyRedisLeft(), deadline(2000)]);
      if (how === "closed") return true;
    }
    const left = options.running();
    if (redisAway() || left === 0) logger.warn(`Redis does not answer: ${options.name} stops without it (a job whose outcome could not be recorded is taken up again once its lock expires)`);
    else logger.warn({ running: left }, `${options.name} stops without waiting for ${left} ${what} still running; they are taken up again once their lock expires`);
    // BullMQ's disconnect waits for an "end" that a socket never connected does not emit.
    await settlesWithin(Promise.all(workers.map((worker) => worker.disconnect())), 250);
    return false;
  } finally {
    stop.abort();
  }
}

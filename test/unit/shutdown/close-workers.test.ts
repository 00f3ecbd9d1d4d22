import { EventEmitter } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { RedisClient } from "../../../src/redis/redis-connection.js";
import { closeWorkers, redisAwayGraceMs, type StoppableWorker } from "../../../src/shutdown/close-workers.js";
import { capturedLogger } from "../../helpers/captured-logger.js";

/** A worker whose close ends when the test says: its last job's completion waits on Redis. */
function workerClosingWhen(done: Promise<void>): StoppableWorker {
  const events = new EventEmitter();
  return {
    async close() {
      events.emit("closing", "closing");
      await done;
    },
    async disconnect() {},
    once: (event, listener) => events.once(event, listener),
  };
}

describe("closeWorkers: Redis away during a stop", () => {
  const options = (worker: StoppableWorker, connection: { status: string }, logger = capturedLogger().logger) => ({
    workers: [worker],
    running: () => 1,
    runningWithoutRedis: () => 0,
    connection: connection as unknown as RedisClient,
    timeoutMs: 20_000,
    name: "the dispatcher",
    what: "deliveries",
    cutWorkGoes: "they go back to their queue",
    logger,
  });

  it("when the workers' connection reconnects for a moment, then the stop waits it out and the workers close cleanly", async () => {
    const connection = { status: "ready" };
    let complete = () => {};
    const worker = workerClosingWhen(new Promise<void>((ok) => (complete = ok)));
    const logs = capturedLogger();
    const closing = closeWorkers(options(worker, connection, logs.logger));
    connection.status = "reconnecting";
    await sleep(redisAwayGraceMs / 4);
    connection.status = "ready";
    // The job's completion goes through once Redis is back.
    complete();
    expect(await closing).toBe(true);
    expect(logs.lines.filter((line) => String(line.msg).startsWith("Redis does not answer"))).toEqual([]);
  });

  it("when Redis stays away and nothing could end without it, then the stop gives up on the workers after the grace", async () => {
    const connection = { status: "reconnecting" };
    const worker = workerClosingWhen(new Promise<void>(() => {}));
    const logs = capturedLogger();
    const started = Date.now();
    expect(await closeWorkers(options(worker, connection, logs.logger))).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(redisAwayGraceMs);
    expect(logs.lines.filter((line) => String(line.msg).startsWith("Redis does not answer: the dispatcher stops without it"))).toHaveLength(1);
  });
});

import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { bullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { drainLegacyLayout, type Closable } from "../../src/upgrade/drain-legacy-layout.js";
import { useCleanup } from "../helpers/cleanup.js";
import { userEvent } from "../helpers/fixtures.js";

/**
 * A stop that begins while the drain of an earlier key layout is looking: the look may find
 * a queue with jobs and no worker yet, and starts none. One started then would be out of the
 * stop's reach (its hurry, its wait) and would hold the process open.
 */
describe("a stop while the earlier key layout's drain is looking", () => {
  const redis = createRedis(inject("redisUrl"), "worker");
  const cleanup = useCleanup("all");
  afterAll(async () => {
    await cleanup.run();
    redis.disconnect();
  });

  it("when a queue gets jobs and the stop begins during the look that finds them, then no worker starts for it and the running one is closed", async () => {
    const prefix = `test-${randomUUID()}`;
    const legacy = (route: string) => {
      const queue = new Queue(deliveryQueueName(route), { connection: redis, prefix: bullPrefix(prefix) });
      cleanup.push(() => queue.close());
      return queue;
    };
    const addJob = async (queue: Queue) => {
      const event = userEvent();
      await queue.add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id) });
    };
    await addJob(legacy("a"));

    // Each look begins with one GET: the second is held until the stop has begun.
    let gets = 0;
    let lookHeld!: () => void;
    const secondLook = new Promise<void>((resolve) => (lookHeld = resolve));
    let releaseLook!: () => void;
    const released = new Promise<void>((resolve) => (releaseLook = resolve));
    const held = new Proxy(redis, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (property === "get") {
          return async (...args: Parameters<Redis["get"]>) => {
            if (++gets === 2) {
              lookHeld();
              await released;
            }
            return target.get(...args);
          };
        }
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });

    const started: string[] = [];
    const closed: string[] = [];
    const worker = (name: string): Closable => {
      started.push(name);
      return { close: async () => void closed.push(name), hurry: () => {} };
    };
    const drain = await drainLegacyLayout({ redis: held, queuePrefix: prefix, routes: ["a", "b"], logger: createLogger("silent"), drain: { route: worker, reconcile: () => worker("reconcile") } });
    expect(started).toEqual(["a"]);

    await addJob(legacy("b"));
    // The next look comes 5 s on while a queue drains (drain-legacy-layout.ts).
    await secondLook;
    const stopping = drain.close();
    releaseLook();
    await stopping;

    expect(started).toEqual(["a"]);
    expect(closed).toEqual(["a"]);
  }, 60_000);
});

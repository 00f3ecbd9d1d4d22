import { UnrecoverableError, Worker } from "bullmq";
import { afterEach, describe, expect, inject, it } from "vitest";
import { pageDeadLetters } from "../../src/admin/page-dead-letters.js";
import type { DeliveryQueue, DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { closeRedis, createRedis } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";

const redisUrl = inject("redisUrl");

/** The queue as it is, but the first read of a range of its ids also removes the second job of that range: a replay or a removal landing between the page's two reads. */
function removingOnce(queue: DeliveryQueue): DeliveryQueue {
  let removed = false;
  return new Proxy(queue, {
    get(target, property) {
      if (property === "getRanges") {
        return async (...args: Parameters<DeliveryQueue["getRanges"]>) => {
          const ids = await target.getRanges(...args);
          if (!removed && ids.length > 1) {
            removed = true;
            await (await target.getJob(ids[1]!))!.remove();
          }
          return ids;
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe("a dead-letter page when a letter goes while it is read", () => {
  let harness: DispatchHarness | undefined;
  afterEach(() => harness?.close());

  it("when a dead letter is removed between the read of a page's ids and of its jobs, then the page leaves it out, and the next page goes on in the same route instead of skipping the rest of it", async () => {
    harness = await createDispatchHarness(redisUrl, ["first", "second"].map((name) => testRoute(name, "http://127.0.0.1:9/", { maxAttemptsPerEvent: 1 })));
    // Real dead letters: each route's queue, a worker that refuses every job at once.
    const connection = createRedis(redisUrl, "worker");
    try {
      for (const [route, count] of [["first", 5], ["second", 2]] as const) {
        const queue = harness.queues.forRoute(route);
        await queue.addBulk(Array.from({ length: count }, () => {
          const event = userEvent();
          return { name: event.type, data: { event, origin: "webhook" as const, receivedAt: Date.now() }, opts: { jobId: event.id } };
        }));
        const refuser = new Worker(deliveryQueueName(route), async () => {
          throw new UnrecoverableError("downstream answered 400");
        }, { connection, prefix: deliveryQueueBullPrefix(harness.prefix, route) });
        while ((await queue.getFailedCount()) < count) await new Promise((ok) => setTimeout(ok, 50));
        await refuser.close();
      }
    } finally {
      await closeRedis(connection);
    }
    const first = harness.queues.forRoute("first");
    const queues: DeliveryQueues = { ...harness.queues, all: () => harness!.queues.all().map((queue) => (queue === first ? removingOnce(queue) : queue)) };
    const firstIds = await first.getRanges(["failed"], 0, -1);

    const page = await pageDeadLetters(queues, { limit: 3 });
    // The removed one left out, and the page filled from the same route: the letter after the
    // removal shifts by one (as after a replay between two pages), the route's last one is
    // listed, not skipped as if the route were read to its end.
    expect(page.deadLetters.map((letter) => letter.jobId)).toEqual([firstIds[0], firstIds[2], firstIds[4]]);
    const next = await pageDeadLetters(harness.queues, { after: page.next!, limit: 3 });
    expect(next.deadLetters.map((letter) => letter.route)).toEqual(["second", "second"]);
    expect(next.next).toBeUndefined();
  });
});

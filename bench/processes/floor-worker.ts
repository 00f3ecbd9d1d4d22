import { Worker } from "bullmq";
import { createDownstreamClient } from "../../src/dispatch/downstream-client.js";
import type { DeliveryJobData } from "../../src/queue/delivery-job.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import type { Route } from "../../src/routes/route.js";

/**
 * The worker floor: what taking a job from BullMQ and POSTing it costs by itself. A BullMQ
 * worker on a route queue built as the service builds it (same prefix, concurrency 10,
 * the service's HTTP client), whose processor only sends the event (`post`), or does
 * nothing (`noop`: BullMQ alone). No ledger, circuit, metrics or logs: the service's
 * worker can only cost more.
 *   node --import tsx bench/processes/floor-worker.ts <redis-url> <queue-prefix> <sink-url> <post|noop>
 */
const [redisUrl, queuePrefix, sinkUrl, mode] = process.argv.slice(2);
if (!redisUrl || !queuePrefix || !sinkUrl || (mode !== "post" && mode !== "noop")) {
  process.stderr.write("error: floor-worker.ts <redis-url> <queue-prefix> <sink-url> <post|noop>\n");
  process.exit(2);
}
const connection = createRedis(redisUrl, "worker");
await untilReady(connection);
const route: Route = { name: "default", match: ["*"], url: sinkUrl, headers: {}, timeoutMs: 10_000, concurrency: 10, dropStale: false };
const client = createDownstreamClient(route);
const worker = new Worker<DeliveryJobData>(
  deliveryQueueName(route.name),
  async (job) => {
    if (mode === "noop") return;
    const body = JSON.stringify(job.data.event);
    const answer = await client.post({ "content-type": "application/cloudevents+json", "webhook-id": job.data.event.id }, body);
    if (!("status" in answer) || answer.status >= 300) throw new Error(`sink answered ${JSON.stringify(answer)}`);
  },
  { connection, prefix: deliveryQueueBullPrefix(queuePrefix, route.name), concurrency: route.concurrency },
);
await worker.waitUntilReady();
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
process.once("SIGTERM", () => void worker.close().then(() => (client.close(), connection.quit())).then(() => process.exit(0)));

import express from "express";
import { createServer } from "node:http";
import { settings } from "../../src/config/config.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import type { Route } from "../../src/routes/route.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { serveBenchProcess } from "../lib/serve-bench-process.js";

/**
 * The floor: what a durable acknowledgement ("stores it in BullMQ, answers 2xx
 * only once it is stored") costs by itself. A bare Express 5 app that reads the body,
 * parses the JSON and adds one BullMQ job to a route queue built as the service builds
 * them (same options, job id from the event id), then answers 202. No credentials, no
 * CloudEvents validation, no dedupe ledger, no metrics: the receiver can only be slower.
 *   node --import tsx bench/processes/floor-server.ts <redis-url> <queue-prefix>
 */
const [redisUrl, queuePrefix] = process.argv.slice(2);
if (!redisUrl || !queuePrefix) {
  process.stderr.write("error: give the Redis URL and a queue prefix: floor-server.ts <redis-url> <queue-prefix>\n");
  process.exit(2);
}
const redis = createRedis(redisUrl, "client");
await untilReady(redis);
const route: Route = { name: "default", match: ["*"], url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 10_000, maxAttemptsPerEvent: 5, concurrency: 10 };
const retention = { ageSeconds: settings.COMPLETED_JOB_RETENTION_SECONDS[0].parse(undefined), count: settings.COMPLETED_JOB_RETENTION_COUNT[0].parse(undefined) };
const queue = createDeliveryQueues(redis, queuePrefix, [route], retention).forRoute(route.name);

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.post(["/webhooks", "/webhooks/:streamId"], express.raw({ type: () => true, limit: 1_048_576 }), async (req, res) => {
  const event = JSON.parse((req.body as Buffer).toString("utf8")) as CloudEvent;
  await queue.add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id) });
  res.status(202).json({ accepted: 1, duplicates: 0 });
});
serveBenchProcess(createServer(app), () => queue.close());

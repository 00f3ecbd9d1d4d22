/**
 * Measures delivery throughput: `node --import tsx test/helpers/dispatch-throughput.ts [events] [routes] [concurrency]`.
 * Starts its own redis-server and a downstream that answers 204 at once, queues the
 * events through the event store, then times the dispatcher draining them.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDispatcher } from "../../src/dispatch/create-dispatcher.js";
import { createLogger } from "../../src/logger.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createRedis, untilReady } from "../../src/queue/redis-connection.js";
import { startRedisServer } from "../../src/queue/redis-server.js";
import { testRoute } from "./dispatch-harness.js";
import { userEvent } from "./fixtures.js";

const [events = 10_000, routeCount = 1, concurrency = 50] = process.argv.slice(2).map(Number);
const dir = await mkdtemp(join(tmpdir(), "sk-bench-"));
const redisServer = await startRedisServer({ dir, appendOnly: false });
let received = 0;
let done = () => {};
const finished = new Promise<void>((ok) => (done = ok));
const sink = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(204).end();
    if (++received === events * routeCount) done();
  });
});
await new Promise<void>((ok) => sink.listen(0, "127.0.0.1", ok));
const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/`;
const routes = Array.from({ length: routeCount }, (_, i) => testRoute(`r${i}`, url, { concurrency }));

const redis = createRedis(redisServer.url, "client");
await untilReady(redis as never);
const prefix = `bench-${randomUUID()}`;
const queues = createDeliveryQueues(redis, prefix, routes, 60);
const ledger = createEventLedger(redis, prefix, 600);
const store = createEventStore(ledger, queues, routes);
for (let i = 0; i < events; i += 100) {
  await Promise.all(Array.from({ length: Math.min(100, events - i) }, () => store.store(userEvent(), { origin: "webhook" })));
}

const started = performance.now();
const dispatcher = createDispatcher({
  redisUrl: redisServer.url, queuePrefix: prefix, routes, ledger, logger: createLogger("warn"),
  backoffBaseMs: 100, backoffMaxMs: 1000, shutdownTimeoutMs: 1000,
});
await finished;
const seconds = (performance.now() - started) / 1000;
console.log(`${events * routeCount} deliveries (${events} events x ${routeCount} routes, concurrency ${concurrency}) in ${seconds.toFixed(2)} s: ${Math.round((events * routeCount) / seconds)} deliveries/s`);
await dispatcher.close();
await queues.close();
redis.disconnect();
sink.close();
await redisServer.stop();
await rm(dir, { recursive: true, force: true });

/**
 * Measures delivery throughput: `node --import tsx test/helpers/dispatch-throughput.ts [events] [routes] [concurrency]`.
 * Starts its own redis-server and a downstream process that answers 204 at once, queues the
 * events through the event store, then times the dispatcher draining them.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDispatcher } from "../../src/dispatch/create-dispatcher.js";
import { createLogger } from "../../src/logging/logger.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { routesMatching } from "../../src/routes/route.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { testRoute } from "./dispatch-harness.js";
import { userEvent } from "./fixtures.js";

const [events = 10_000, routeCount = 1, concurrency = 50] = process.argv.slice(2).map(Number);
const dir = await mkdtemp(join(tmpdir(), "sk-bench-"));
const redisServer = await startRedisServer({ dir, appendOnly: false });
// The downstream runs in its own process, so this one measures the dispatcher alone.
const sinkCode = `
let received = 0;
const server = require("node:http").createServer((req, res) => {
  req.resume();
  req.on("end", () => { res.writeHead(204).end(); if (++received === ${events * routeCount}) process.send("done"); });
});
server.listen(0, "127.0.0.1", () => process.send(server.address().port));`;
const sink = spawn(process.execPath, ["-e", sinkCode], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
const port = await new Promise<number>((ok) => sink.once("message", (message) => ok(Number(message))));
const finished = new Promise<void>((ok) => sink.on("message", (message) => message === "done" && ok()));
const url = `http://127.0.0.1:${port}/`;
const routes = Array.from({ length: routeCount }, (_, i) => testRoute(`r${i}`, url, { concurrency }));

const redis = createRedis(redisServer.url, "client");
await untilReady(redis as never);
const prefix = `bench-${randomUUID()}`;
const queues = createDeliveryQueues(redis, prefix, routes, { ageSeconds: 60, count: 1000 });
const ledger = createEventLedger(redis, prefix, 600);
const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes) });
for (let i = 0; i < events; i += 100) {
  await Promise.all(Array.from({ length: Math.min(100, events - i) }, () => store.store(userEvent(), { origin: "webhook" })));
}

const redisCpu = () => {
  // utime + stime of the redis-server, in clock ticks (100 per second on Linux)
  const fields = readFileSync(`/proc/${redisServer.process.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const redisCpuBefore = redisCpu();
const cpuBefore = process.cpuUsage();
const started = performance.now();
const dispatchConnection = createRedis(redisServer.url, "worker");
const dispatcher = createDispatcher({
  connection: dispatchConnection, queuePrefix: prefix, routes, ledger, logger: createLogger("warn"),
  backoffBaseMs: 100, backoffMaxMs: 1000, shutdownTimeoutMs: 1000,
});
await finished;
const seconds = (performance.now() - started) / 1000;
const deliveries = events * routeCount;
const cpu = process.cpuUsage(cpuBefore);
console.log(`${deliveries} deliveries (${events} events x ${routeCount} routes, concurrency ${concurrency}) in ${seconds.toFixed(2)} s: ${Math.round(deliveries / seconds)} deliveries/s`);
// CPU per delivery does not depend on what else the machine runs, unlike the rate.
console.log(`CPU per delivery: ${Math.round((cpu.user + cpu.system) / deliveries)} µs in this process (the dispatcher), ${Math.round(((redisCpu() - redisCpuBefore) * 1000) / deliveries)} µs in redis-server`);
await dispatcher.close();
dispatchConnection.disconnect();
await queues.close();
redis.disconnect();
sink.kill();
await redisServer.stop();
await rm(dir, { recursive: true, force: true });

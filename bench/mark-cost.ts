/**
 * This process's CPU per delivered mark by how many marks share a script call:
 *   node --import tsx bench/mark-cost.ts [marks] [rounds]
 * Its own redis-server; per round and batch size k (1, 4, 16, 64), `marks` ids claimed,
 * then marked k at a time, each group awaited before the next (the ledger sends a group
 * as one call), so every call pays its own write, read and wake-up as a worker's do when
 * marks leave alone. The first round runs cold (the JIT): compare the later ones
 * (docs/benchmarks.md, "Marks gathered").
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEventLedger } from "../src/queue/event-ledger.js";
import { createRedis, untilReady } from "../src/redis/redis-connection.js";
import { startRedisServer } from "../src/redis/redis-server.js";
import { median } from "./lib/percentile.js";

const [marks = 20_000, rounds = 4] = process.argv.slice(2).map(Number);
const dir = await mkdtemp(join(tmpdir(), "sk-mark-cost-"));
const redisServer = await startRedisServer({ dir, appendOnly: false });
const redis = createRedis(redisServer.url, "worker");
await untilReady(redis);
const ledger = createEventLedger(redis, "mark-cost", 604_800, 1024);
await ledger.shards();
const perMark = new Map<number, number[]>();

for (let round = 1; round <= rounds; round++) {
  for (const k of [1, 4, 16, 64]) {
    const ids = Array.from({ length: marks }, (_, index) => `evt_${round}_${k}_${index}`);
    for (let index = 0; index < marks; index += 64) {
      await Promise.all(ids.slice(index, index + 64).map((id) => ledger.claim(id, { receivedAt: Date.now(), origin: "webhook", type: "user.updated", routes: ["default"] }, false)));
    }
    const before = process.cpuUsage();
    for (let index = 0; index < marks; index += k) await Promise.all(ids.slice(index, index + k).map((id) => ledger.markDelivered(id, "default", Date.now())));
    const cpu = process.cpuUsage(before);
    const us = (cpu.user + cpu.system) / marks;
    perMark.set(k, [...(perMark.get(k) ?? []), Math.round(us * 10) / 10]);
    process.stdout.write(`round ${round}, ${k} marks a call: ${us.toFixed(1)} µs CPU per mark\n`);
  }
}
for (const [k, values] of perMark) process.stdout.write(`${k} a call: median ${median(values.slice(1))} µs (${values.join(", ")}; the first round left out)\n`);
redis.disconnect();
await redisServer.stop();
await rm(dir, { recursive: true, force: true });

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startRedisServer } from "../src/redis/redis-server.js";

/**
 * What Redis spends per attempt record on its way through the archive's outbox (XADD,
 * XREADGROUP, then XDEL and XACK, as the writer does), by how records share entries: one
 * entry per record (today), one per record removed by XTRIM MINID instead of XDEL, or 50
 * records per entry (a worker's gather as one entry). Redis's own CPU (INFO cpu) per record,
 * append-only file on, as the embedded Redis runs, and this client's (ioredis's commands and
 * replies, each record's JSON parsed as the writer does):
 *   node --import tsx bench/outbox-entry-cost.ts [records per round] [rounds]
 */
const [recordsArg, roundsArg] = process.argv.slice(2);
const records = Number(recordsArg ?? 50_000);
const rounds = Number(roundsArg ?? 3);
const now = Date.now();
const record = { kind: "attempt", eventId: "evt_8QnH4b2kLm3Xr7TfPq9aWz", receivedAt: now, route: "crm", key: "evt_8QnH4b2kLm3Xr7TfPq9aWz:1", at: now + 20, status: 200, outcome: "delivered" };

async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1]);
  return field("used_cpu_user") + field("used_cpu_sys");
}

async function costPerRecord(redis: Redis, key: string, perEntry: number, remove: "xdel" | "xtrim"): Promise<{ redis: number; client: number }> {
  await redis.del(key);
  await redis.xgroup("CREATE", key, "writers", "0", "MKSTREAM");
  const entry = perEntry === 1 ? ["r", JSON.stringify(record)] : ["a", JSON.stringify(Array.from({ length: perEntry }, () => record))];
  const before = await redisCpuSeconds(redis);
  const clientBefore = process.cpuUsage();
  for (let sent = 0; sent < records; sent += 500) {
    const pipeline = redis.pipeline();
    for (let index = 0; index < 500; index += perEntry) pipeline.xadd(key, "*", ...entry);
    await pipeline.exec();
    const reply = (await redis.call("XREADGROUP", "GROUP", "writers", "bench", "COUNT", 500, "STREAMS", key, ">")) as unknown[];
    const entries = (typeof reply[0] === "string" ? reply[1] : (reply[0] as unknown[])[1]) as Array<[string, string[]]>;
    const ids = entries.map(([id]) => id);
    for (const [, fields] of entries) JSON.parse(fields[1]!);
    if (remove === "xdel") await redis.xdel(key, ...ids);
    else await redis.xtrim(key, "MINID", ids.at(-1)!);
    await redis.xack(key, "writers", ...ids);
  }
  const client = process.cpuUsage(clientBefore);
  return { redis: (((await redisCpuSeconds(redis)) - before) * 1e6) / records, client: (client.user + client.system) / records };
}

const dir = await mkdtemp(join(tmpdir(), "sk-outbox-cost-"));
const server = await startRedisServer({ dir });
const redis = new Redis(server.url);
try {
  for (let round = 1; round <= rounds; round++) {
    const one = await costPerRecord(redis, "one", 1, "xdel");
    const trimmed = await costPerRecord(redis, "trimmed", 1, "xtrim");
    const fifty = await costPerRecord(redis, "fifty", 50, "xdel");
    const show = ({ redis, client }: { redis: number; client: number }) => `Redis ${redis.toFixed(1)} + client ${client.toFixed(1)}`;
    console.log(`round ${round}: µs per attempt record: one entry each ${show(one)}; removed by XTRIM ${show(trimmed)}; 50 per entry ${show(fifty)}`);
  }
} finally {
  redis.disconnect();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}

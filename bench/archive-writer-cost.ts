import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { maintainPartitions } from "../src/archive/archive-partitions.js";
import { outboxFields, parseArchiveRecord, type WritableRecord } from "../src/archive/archive-record.js";
import { migrateArchive } from "../src/archive/migrate-archive.js";
import { startPostgresServer, systemPostgresBinDir } from "../src/archive/postgres-server.js";
import { writeArchiveBatch } from "../src/archive/write-archive-batch.js";
import { freePort } from "../src/redis/redis-server.js";
import { treeCpuSeconds } from "./lib/cpu-usage.js";
import { median } from "./lib/percentile.js";
import { userUpdated } from "./scenarios/run-archive.js";

/**
 * What the archive writer costs per archived event, apart from the pipeline: outbox records
 * as the writer reads them (an entry's fields: one event and its one delivered attempt), parsed and
 * written in batches of 500 through writeArchiveBatch into a throwaway Postgres. Per round:
 * this process's CPU µs per event (the writer's part of a service process), Postgres's
 * (every backend), and the bytes on disk per event. Rounds alternate nothing: compare
 * builds by running it on each, several rounds, medians.
 *   node --import tsx bench/archive-writer-cost.ts [events per round] [rounds]
 */
const [eventsArg, roundsArg] = process.argv.slice(2);
const events = Number(eventsArg ?? 20_000);
const rounds = Number(roundsArg ?? 3);
const binDir = systemPostgresBinDir();
if (!binDir) throw new Error("needs initdb and postgres: apt-get install -y postgresql");
const dir = await mkdtemp(join(tmpdir(), "sk-writer-cost-"));
const server = await startPostgresServer({ binDir, dataDir: join(dir, "data"), port: await freePort(), socketDir: dir });
const pool = new pg.Pool({ connectionString: server.url, max: 2 });
try {
  await migrateArchive(pool);
  const now = Date.now();
  await maintainPartitions(pool, now, Number(process.env.RETENTION_DAYS ?? 30));
  const day = new Date(now).toISOString().slice(0, 10).replaceAll("-", "");
  const firstArrival = Math.floor(now / 86_400_000) * 86_400_000 + 3_600_000;
  const figures: Array<{ nodeUs: number; postgresUs: number; bytes: number }> = [];
  for (let round = 1; round <= rounds; round++) {
    await pool.query("TRUNCATE events, attempts");
    // The outbox entries, made before the clock starts: the receiver's and the worker's work.
    const entries: string[][] = [];
    for (let index = 0; index < events; index++) {
      const event = userUpdated(round * events + index, new Date(firstArrival + index).toISOString());
      const receivedAt = firstArrival + index;
      entries.push(outboxFields({ kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] }));
      entries.push(outboxFields({ kind: "attempt", eventId: event.id, receivedAt, route: "crm", key: `${event.id}:1`, at: receivedAt + 20, status: 200, outcome: "delivered" }));
    }
    const cpuBefore = process.cpuUsage();
    const postgresBefore = treeCpuSeconds(server.process.pid!)!;
    for (let start = 0; start < entries.length; start += 500) {
      const records = entries.slice(start, start + 500).map((fields) => parseArchiveRecord(fields[1], fields[3]) as WritableRecord);
      await writeArchiveBatch(pool, records);
    }
    const cpu = process.cpuUsage(cpuBefore);
    const postgresSeconds = treeCpuSeconds(server.process.pid!)! - postgresBefore;
    await pool.query("VACUUM ANALYZE events, attempts");
    const size = (await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('events_p${day}') + pg_total_relation_size('attempts_p${day}') AS bytes`)).rows[0]!;
    const figure = { nodeUs: Math.round((cpu.user + cpu.system) / events), postgresUs: Math.round((postgresSeconds * 1e6) / events), bytes: Math.round(Number(size.bytes) / events) };
    figures.push(figure);
    console.log(`round ${round}: writer (this process) ${figure.nodeUs} µs/event, Postgres ${figure.postgresUs} µs/event, ${figure.bytes} B/event on disk`);
  }
  // Where the last round's bytes are: each table's heap (with its TOAST) and each index.
  const parts = await pool.query<{ name: string; bytes: string }>(
    `SELECT c.relname AS name, CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END AS bytes
     FROM pg_class c WHERE c.relname LIKE '%p${day}%' AND c.relkind IN ('r', 'i') ORDER BY 2 DESC`,
  );
  console.log(`bytes per event: ${parts.rows.map((row) => `${row.name} ${Math.round(Number(row.bytes) / events)}`).join(", ")}`);
  const at = (key: "nodeUs" | "postgresUs" | "bytes") => median(figures.map((figure) => figure[key]));
  console.log(`medians of ${rounds} rounds of ${events} events: writer ${at("nodeUs")} µs/event, Postgres ${at("postgresUs")} µs/event, total ${at("nodeUs") + at("postgresUs")}; ${at("bytes")} B/event`);
} finally {
  await pool.end();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}

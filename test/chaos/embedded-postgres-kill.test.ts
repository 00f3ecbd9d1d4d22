import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { startChaosSink } from "./chaos-sink.js";
import { startLoadDriver } from "./start-load-driver.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";

/** The postmaster's pid and every process it started (its backends, checkpointer, WAL writer...). */
function postgresProcesses(postmaster: number): number[] {
  const children = execFileSync("ps", ["-o", "pid=", "--ppid", String(postmaster)], { encoding: "utf8" }).split("\n").map(Number).filter((pid) => pid > 0);
  return [postmaster, ...children];
}

/**
 * The default set-up's archive (no ARCHIVE_DATABASE_URL: the embedded Postgres under
 * DATA_DIR) with its postmaster and every backend SIGKILLed while webhooks arrive: the
 * service restarts it from its write-ahead log with no one acting, and every acknowledged
 * event is archived (the writer's commits are durable, and the outbox keeps what waited).
 */
describe("chaos: the embedded Postgres killed under load", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the embedded Postgres and its backends are SIGKILLed while webhooks arrive at 40/s, then it is restarted and every acknowledged event is archived", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-chaos-postgres-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const sink = await startChaosSink(() => ({ status: 200, delayMs: 5 }));
    cleanup.push(() => sink.close());
    const service = await startServiceProcess("all", serviceProcessEnv({ DOWNSTREAM_URL: sink.url, DATA_DIR: dataDir, ARCHIVE: "on", LOG_LEVEL: "info" }));
    cleanup.push(() => service.stop(20_000));
    // Last resort: a Postgres left behind by a failed test.
    const pidFile = join(dataDir, "postgres", "data", "postmaster.pid");
    cleanup.push(async () => {
      const pid = Number((await readFile(pidFile, "utf8").catch(() => "")).split("\n")[0]);
      if (pid > 0) process.kill(pid, "SIGKILL");
    });

    const driver = await startLoadDriver({ url: `${service.publicUrl}/webhooks`, authorization, ratePerSecond: 40, durationMs: 10_000 });
    cleanup.push(async () => driver.kill());
    await driver.until((progress) => progress.acknowledged >= 120, 60_000);
    const postmaster = Number((await readFile(pidFile, "utf8")).split("\n")[0]);
    for (const pid of postgresProcesses(postmaster)) process.kill(pid, "SIGKILL");
    const load = await driver.finished;
    expect(load.refused, "answers other than 202/503 to valid events").toEqual([]);
    const acknowledged = [...new Set(load.acknowledged)];
    expect(acknowledged.length).toBeGreaterThan(200);

    await until("the embedded Postgres restarted by the service", async () => {
      const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
      return Number(/^streamkeeper_embedded_postgres_restarts_total (\d+)/m.exec(metrics)?.[1] ?? 0) >= 1 || undefined;
    });
    const client = new pg.Client({ host: join(dataDir, "postgres"), port: 5432, user: "postgres", database: "streamkeeper" });
    await client.connect();
    cleanup.push(() => client.end());
    const archived = async () => Number((await client.query<{ n: string }>("SELECT count(DISTINCT id) AS n FROM events WHERE id = ANY($1)", [acknowledged])).rows[0]!.n);
    await until(`every acknowledged event archived (${acknowledged.length})`, async () => ((await archived()) === acknowledged.length ? true : undefined), 120_000);
    expect(service.output()).toContain("the embedded Postgres of the archive had died; restarted it from its write-ahead log");
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^streamkeeper_archive_up 1$/m);
  });
});

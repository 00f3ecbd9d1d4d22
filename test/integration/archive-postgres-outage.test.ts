import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { systemPostgresBinDir, type PostgresServer } from "../../src/archive/postgres-server.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startPostgresOnFreePort } from "../helpers/start-postgres-on-free-port.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";
import { refusedPort } from "../helpers/explicit-ports.js";

/**
 * Postgres away for 8 s while 20 events a second arrive: about 160 events wait in the outbox
 * through four or more of the writer's failed tries (it retries every 2 s). What the rule needs
 * is an outage that spans several tries, not a long one (it was 60 s, then 15 s: the same proof,
 * 52 s and 7 s slower).
 */
const outageMs = 8_000;
const perSecond = 20;

async function lagSeconds(adminUrl: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  return Number(/^streamkeeper_archive_lag_seconds (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
}

describe("archive: Postgres away", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when Postgres is unreachable at start, then the service starts, says the archive is unavailable and keeps trying", async () => {
    const { logger, lines } = capturedLogger("info");
    const service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: `postgres://postgres@127.0.0.1:${refusedPort}/postgres` }, "all", logger);
    cleanup.push(() => service.close());
    expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200);
    await expect.poll(() => lines.some((line) => line.level === 50 && String(line.msg).startsWith("archive unavailable"))).toBe(true);
    // Said once, not on every retry; the count of failed tries keeps growing.
    const errors = async () => Number(/^streamkeeper_archive_writes_total\{result="error"\} (\S+)$/m.exec(await (await fetch(`${service.adminUrl}/metrics`)).text())?.[1] ?? 0);
    const first = await errors();
    await expect.poll(errors).toBeGreaterThan(first);
    expect(lines.filter((line) => String(line.msg).startsWith("archive unavailable"))).toHaveLength(1);
  });

  it("when the embedded Postgres cannot start, then the service runs and delivers, says so once at error, and streamkeeper_archive_not_started is 1", async () => {
    // DATA_DIR under a file: the embedded Postgres's folder cannot be made (Redis and the credentials come from settings).
    const dir = await mkdtemp(join(tmpdir(), "sk-pg-nostart-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, "a-file"), "");
    const { logger, lines } = capturedLogger("info");
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    // ADMIN_TOKEN given: a DATA_DIR that cannot hold the generated token would stop the start first.
    const service = await startTestService({ ARCHIVE: "on", DATA_DIR: join(dir, "a-file", "data"), DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: "outage-admin-token" }, "all", logger);
    cleanup.push(() => service.close());
    expect(lines.filter((line) => line.level === 50 && String(line.msg).startsWith("the service runs WITHOUT its archive"))).toHaveLength(1);
    expect(await (await fetch(`${service.adminUrl}/metrics`)).text()).toMatch(/^streamkeeper_archive_not_started 1$/m);
    const event = userEvent();
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === event.id));
  });

  it("when Postgres stops for 8 s while 20 events a second arrive, then every event is answered 202 and delivered, and the archive is complete once it is back", async () => {
    const binDir = systemPostgresBinDir()!;
    const dir = await mkdtemp(join(tmpdir(), "sk-pg-outage-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    let postgres: PostgresServer = await startPostgresOnFreePort({ binDir, dataDir: join(dir, "data"), socketDir: dir });
    cleanup.push(() => postgres.stop());
    // The service's Postgres at an address the test holds: the restarted server may bind any free port.
    const postgresDoor = await startFrontDoor();
    cleanup.push(() => postgresDoor.close());
    postgresDoor.open(postgres.url);
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: `postgres://postgres@127.0.0.1:${postgresDoor.port}/postgres`, DOWNSTREAM_URL: sink.url });
    cleanup.push(() => service.close());

    const statuses: number[] = [];
    const ids: string[] = [];
    const send = async () => {
      const event = userEvent();
      ids.push(event.id);
      statuses.push((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status);
    };
    // A steady 20 a second until stopped: paced by the clock, each send awaited in its slot.
    let sending = true;
    const load = (async () => {
      const start = Date.now();
      for (let sent = 0; sending; sent++) {
        await send();
        const due = start + ((sent + 1) * 1000) / perSecond;
        if (due > Date.now()) await new Promise((ok) => setTimeout(ok, due - Date.now()));
      }
    })();

    await expect.poll(() => ids.length).toBeGreaterThan(40);
    await postgres.stop();
    postgresDoor.shut();
    const stoppedAt = Date.now();
    let maxLag = 0;
    while (Date.now() - stoppedAt < outageMs) {
      maxLag = Math.max(maxLag, await lagSeconds(service.adminUrl));
      await new Promise((ok) => setTimeout(ok, 1000));
    }
    postgres = await startPostgresOnFreePort({ binDir, dataDir: join(dir, "data"), socketDir: dir });
    postgresDoor.open(postgres.url);
    // Events keep arriving after it is back (a count, not the pace: a loaded machine sends fewer a second).
    const sentWhileDown = ids.length;
    await expect.poll(() => ids.length, { timeout: 120_000 }).toBeGreaterThan(sentWhileDown + 40);
    sending = false;
    await load;

    expect(statuses.filter((status) => status !== 202)).toEqual([]);
    // The outbox waited the whole outage: its oldest record grew about as old as the outage.
    expect(maxLag).toBeGreaterThan(outageMs / 1000 / 2);
    await sink.until((requests) => new Set(requests.map((request) => request.headers["webhook-id"])).size >= ids.length, 120_000);
    const db = new pg.Pool({ connectionString: postgres.url, max: 1 });
    cleanup.push(() => db.end());
    await expect.poll(async () => Number((await db.query<{ n: string }>("SELECT count(DISTINCT id) AS n FROM events WHERE id = ANY($1)", [ids])).rows[0]!.n)).toBe(ids.length);
    await expect.poll(async () => Number((await db.query<{ n: string }>("SELECT count(DISTINCT event_id) AS n FROM every_attempt WHERE outcome = 'delivered' AND event_id = ANY($1)", [ids])).rows[0]!.n)).toBe(ids.length);
    // And the lag fell back.
    await expect.poll(() => lagSeconds(service.adminUrl)).toBeLessThan(5);
  }, 420_000);
});

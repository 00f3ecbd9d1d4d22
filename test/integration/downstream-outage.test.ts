import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";

const ids = (requests: SinkRequest[]) => requests.map((request) => String(request.headers["webhook-id"]));

async function metric(service: ServiceProcess, line: string): Promise<number | undefined> {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const found = text.split("\n").find((candidate) => candidate.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.split(" ").at(-1));
}

/**
 * A downstream down for a long stretch (scaled down: seconds), with events arriving all
 * along, against a real `streamkeeper start` process: the route's circuit opens and holds
 * the events without spending their attempts (maxAttemptsPerEvent 3 would make every one
 * a dead letter otherwise), probes now and then, and drains by itself once the downstream
 * is back. Another route delivers throughout.
 */
describe("downstream outage: the circuit breaker", () => {
  let dataDir: string;
  let outage: SinkServer;
  let steady: SinkServer;
  let service: ServiceProcess;
  let down = true;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-outage-"));
    outage = await startSinkServer(() => (down ? { status: 503, body: "down for maintenance" } : {}));
    steady = await startSinkServer();
    const routesFile = join(dataDir, "routes.json");
    await writeFile(
      routesFile,
      JSON.stringify([
        { name: "outage", match: "*", url: outage.url, concurrency: 8, maxAttemptsPerEvent: 3 },
        { name: "steady", match: "*", url: steady.url, concurrency: 8 },
      ]),
    );
    service = await startServiceProcess("all", serviceProcessEnv({
      ROUTES_FILE: routesFile,
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      ADMIN_TOKEN: "t",
      SHUTDOWN_TIMEOUT_MS: "2000",
      DISPATCH_BACKOFF_BASE_MS: "20",
      DISPATCH_BACKOFF_MAX_MS: "200",
      DISPATCH_CIRCUIT_FAILURES: "3",
      DISPATCH_CIRCUIT_PROBE_MIN_MS: "100",
      DISPATCH_CIRCUIT_PROBE_MAX_MS: "1000",
    }));
  }, 90_000);

  afterAll(async () => {
    await service?.stop();
    await outage?.close();
    await steady?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("when a route's downstream answers 503 for a long stretch while events keep arriving, then it is probed, not hammered, and every event arrives once after it recovers, with no dead letter and no one acting", async () => {
    const events = Array.from({ length: 300 }, () => userEvent({ type: "user.updated" }));
    const post = async (index: number) => {
      const answer = await fetch(`${service.publicUrl}/webhooks`, {
        method: "POST",
        body: JSON.stringify(events[index]),
        headers: { authorization, "content-type": "application/json" },
      });
      expect(answer.status).toBe(202);
    };

    // The first third arrives, the circuit opens.
    for (let index = 0; index < 100; index++) await post(index);
    await until("route_circuit_open{route=\"outage\"} is 1", async () => (await metric(service, 'streamkeeper_route_circuit_open{route="outage"}')) === 1, 60_000);
    const openSeenAt = Date.now();
    expect(await metric(service, 'streamkeeper_route_circuit_open{route="steady"}')).toBe(0);
    // The rest keeps arriving during the outage, spread out so the probes have time to run.
    const probesBefore = outage.requests.length;
    for (let index = 100; index < events.length; index++) {
      await post(index);
      if (index % 20 === 0) await steady.until((requests) => new Set(ids(requests)).size > index - 20);
    }
    // The other route delivered everything while this one was down.
    await steady.until((requests) => new Set(ids(requests)).size === events.length, 60_000);
    // Probes go on at a growing interval: wait for two more, then end the outage.
    await outage.until((requests) => requests.length >= probesBefore + 5, 30_000);
    const requestsDuringOutage = outage.requests.length;
    const openForMs = Date.now() - openSeenAt;
    const sentWhileOpen = outage.requests.filter((request) => request.receivedAt >= openSeenAt).length;
    // The admin view: the first event waits for the route (or is the probe right now), with
    // no more attempts than the route allows, however often the open circuit handed it back.
    const described = (await (await fetch(`${service.adminUrl}/admin/events/${events[0]!.id}`, { headers: { authorization: "Bearer t" } })).json()) as {
      routes: { route: string; state: string; attempts: number }[];
    };
    const waiting = described.routes.find((route) => route.route === "outage")!;
    expect(["waiting", "retrying", "delayed", "active"]).toContain(waiting.state);
    expect(waiting.attempts).toBeLessThanOrEqual(3);
    expect(described.routes.find((route) => route.route === "steady")).toMatchObject({ state: "delivered", attempts: 1 });
    // Probed, not hammered, bounded by this run's own open phase however long load made it:
    // one probe at a time, 100 ms then doubling to the 1000 ms cap (the first four take
    // 1.5 s), so at most 5 + openForMs / 1000 probes, plus up to 8 (the route's concurrency)
    // sent before the circuit opened that the sink saw only after we did.
    expect(sentWhileOpen, `sent while open: ${sentWhileOpen} in ${openForMs} ms; ${requestsDuringOutage} during the whole outage`).toBeLessThanOrEqual(5 + 8 + Math.floor(openForMs / 1000));
    down = false;

    await outage.until((requests) => new Set(ids(requests.filter((request) => request.status === 200))).size === events.length, 60_000);
    await until("route_circuit_open{route=\"outage\"} is 0", async () => (await metric(service, 'streamkeeper_route_circuit_open{route="outage"}')) === 0, 60_000);
    const delivered = ids(outage.requests.filter((request) => request.status === 200));
    expect(delivered.sort()).toEqual(events.map((event) => event.id).sort());
    expect(ids(steady.requests).sort()).toEqual(events.map((event) => event.id).sort());
    expect(await metric(service, 'streamkeeper_queue_jobs{queue="deliver-outage",state="failed"}')).toBe(0);
    expect(await metric(service, 'streamkeeper_dispatch_total{route="outage",outcome="dead_letter"}')).toBeUndefined();

    const logs = service.output().split("\n").filter((line) => line.includes('"route":"outage"'));
    expect(logs.some((line) => line.includes('"level":40') && line.includes("route circuit opened"))).toBe(true);
    expect(logs.some((line) => line.includes('"level":30') && line.includes("route circuit closed"))).toBe(true);
  }, 180_000);
});

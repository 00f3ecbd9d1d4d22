import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";


async function delivered(worker: ServiceProcess): Promise<number> {
  const text = await (await fetch(`${worker.adminUrl}/metrics`)).text();
  const line = text.split("\n").find((candidate) => candidate.startsWith('streamkeeper_dispatch_total{route="limited",outcome="delivered"}'));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

/**
 * `ratePerSecond` (README.md#routes) holds across worker processes:
 * one receiver and two `start --role worker` processes, a backlog that both workers drain
 * as fast as they may, each with room for 8 deliveries at once.
 */
describe("route ratePerSecond across two worker processes", () => {
  let dataDir: string;
  let sink: SinkServer;
  const running: ServiceProcess[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-rate-"));
    sink = await startSinkServer();
    const routesFile = join(dataDir, "routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "limited", match: "*", url: sink.url, concurrency: 8, ratePerSecond: 10 }]));
    const env = serviceProcessEnv({ ROUTES_FILE: routesFile, DATA_DIR: dataDir, SHUTDOWN_TIMEOUT_MS: "2000" });
    running.push(...(await Promise.all((["receiver", "worker", "worker"] as const).map((role) => startServiceProcess(role, env)))));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(running.map((service) => service.stop()));
    await sink?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  // The limiter counts starts, in windows of a second; the sink sees arrivals, which a
  // loaded machine bunches or spreads at will. So no per-second ceiling at the sink: a
  // lower bound on the whole run instead, which load can only make easier to meet. At 10
  // starts a second, 50 deliveries span at least 4 windows; one window is left as slack.
  it("when a backlog of 50 waits on a route with ratePerSecond 10, then its deliveries span at least 3 s, each event arrives once, and both workers deliver", async () => {
    const [receiver, ...workers] = running as [ServiceProcess, ServiceProcess, ServiceProcess];
    const events = Array.from({ length: 50 }, () => userEvent({ type: "user.updated" }));
    const answer = await fetch(`${receiver.publicUrl}/webhooks`, {
      method: "POST",
      body: JSON.stringify(events),
      headers: { authorization, "content-type": "application/cloudevents-batch+json" },
    });
    expect(answer.status, await answer.clone().text()).toBe(202);

    await sink.untilReceived(events.length, 60_000);
    const arrivals = sink.requests.map((request) => request.receivedAt);
    expect(arrivals).toHaveLength(events.length);
    const spanMs = Math.max(...arrivals) - Math.min(...arrivals);
    expect(spanMs, `arrivals (ms from the first): ${arrivals.map((at) => at - arrivals[0]!).join(", ")}`).toBeGreaterThanOrEqual((events.length / 10 - 2) * 1000);
    expect(new Set(sink.requests.map((request) => request.headers["webhook-id"])).size).toBe(events.length);
    const perWorker = await Promise.all(workers.map(delivered));
    expect(perWorker.every((count) => count > 0), `deliveries per worker: ${perWorker.join(", ")}`).toBe(true);
  }, 120_000);
});

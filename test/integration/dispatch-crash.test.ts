import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, inject } from "vitest";
import type { Route } from "../../src/routes/route.js";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { startSinkServer, type SinkAnswer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";
import { cliEntry } from "../helpers/start-service-process.js";

const redisUrl = inject("redisUrl");

/** `streamkeeper start --role worker` in a child process; resolves once its dispatcher runs. */
async function startWorkerProcess(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...cliEntry(), "start", "--role", "worker"], {
    env: { PATH: process.env.PATH ?? "", ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1", LOG_LEVEL: "info", ARCHIVE: "off", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout!.setEncoding("utf8");
  await new Promise<void>((ok, fail) => {
    child.stdout!.on("data", (chunk: string) => {
      output += chunk;
      if (output.includes('"msg":"dispatcher started"')) ok();
    });
    child.once("exit", (code) => fail(new Error(`worker process exited (${code}) before its dispatcher started: ${output.slice(-1000)}`)));
  });
  return child;
}

const answered = (requests: SinkRequest[]) => new Set(requests.filter((request) => request.status === 200).map((request) => request.headers["webhook-id"]));

describe("dispatch: crashes and shutdown", () => {
  let harness: DispatchHarness | undefined;
  const sinks: SinkServer[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await harness?.close();
    await Promise.all(sinks.splice(0).map((sink) => sink.close()));
  });

  it("when a worker process is killed during deliveries, then after a restart every event reaches every route, repeating only those in flight", async () => {
    const a = await startSinkServer(() => ({ delayMs: 400 }));
    const b = await startSinkServer(() => ({ delayMs: 400 }));
    sinks.push(a, b);
    const concurrency = 4;
    const routes: Route[] = [testRoute("a", a.url, { concurrency }), testRoute("b", b.url, { concurrency })];
    harness = await createDispatchHarness(redisUrl, routes);
    const events = Array.from({ length: 24 }, () => userEvent());
    for (const event of events) await harness.store.store(event, { origin: "webhook" });

    const dir = await mkdtemp(join(tmpdir(), "sk-dispatch-crash-"));
    await writeFile(join(dir, "routes.json"), JSON.stringify(routes));
    // A short lock, so the restarted worker takes the orphaned jobs over within 5 to 10 s; not
    // shorter: a live worker whose process the loaded machine holds back longer than its lock
    // loses it, and its delivery runs again, a repeat the kill did not cause.
    const env = {
      REDIS_URL: redisUrl, QUEUE_PREFIX: harness.prefix, ROUTES_FILE: join(dir, "routes.json"), DATA_DIR: dir,
      DISPATCH_LOCK_DURATION_MS: "5000", DISPATCH_BACKOFF_BASE_MS: "20",
    };
    const first = await startWorkerProcess(env);
    children.push(first);
    await Promise.all([a.untilReceived(6), b.untilReceived(6)]);
    first.kill("SIGKILL");
    await once(first, "exit");
    // The dead worker's jobs stay active (locked) in Redis: the deliveries in flight at the
    // kill. (What the sinks had recorded at this point would not do: a request the worker
    // sent just before dying may still be in the sink's socket buffer.)
    const inFlightAtKill = new Map(
      await Promise.all(routes.map(async (route, index) => [[a, b][index]!, new Set((await harness!.queues.forRoute(route.name).getActive()).map((job) => job.id))] as const)),
    );

    children.push(await startWorkerProcess(env));
    const all = events.map((event) => event.id);
    await Promise.all([a, b].map((sink) => sink.until((requests) => answered(requests).size === all.length, 120_000)));

    for (const sink of [a, b]) {
      expect(answered(sink.requests)).toEqual(new Set(all));
      for (const request of sink.requests) expect(request.headers["webhook-id"]).toBe(JSON.parse(request.body).id);
      const counts = new Map<string, number>();
      for (const request of sink.requests) counts.set(String(request.headers["webhook-id"]), (counts.get(String(request.headers["webhook-id"])) ?? 0) + 1);
      const repeated = [...counts].filter(([, count]) => count > 1).map(([id]) => id);
      // Only deliveries the killed worker had started (at most its concurrency) come again;
      // it always had some in flight (the sink holds each request 400 ms).
      expect(repeated.length).toBeGreaterThan(0);
      expect(repeated.length).toBeLessThanOrEqual(concurrency);
      for (const id of repeated) expect(inFlightAtKill.get(sink)!.has(id), `${id} repeated but not in flight at the kill`).toBe(true);
      expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("when the dispatcher closes during slow deliveries, then it lets them finish", async () => {
    // Deliveries held until close() was called: none can finish (and free a slot for a
    // fourth job) before the worker stops taking jobs, however slow the machine.
    let release = () => {};
    const held = new Promise<void>((ok) => (release = ok));
    const sink = await startSinkServer(async () => {
      await held;
      return {};
    });
    sinks.push(sink);
    harness = await createDispatchHarness(redisUrl, [testRoute("slow", sink.url, { concurrency: 3 })]);
    const dispatcher = harness.startDispatcher({ shutdownTimeoutMs: 30_000 });
    for (let i = 0; i < 6; i++) await harness.store.store(userEvent(), { origin: "webhook" });
    await sink.untilReceived(3);
    const closed = dispatcher.close();
    release();
    await closed;

    const inFlight = sink.requests.slice(0, 3);
    expect(inFlight.every((request) => request.status === 200)).toBe(true);
    expect(await harness.queues.forRoute("slow").getJobCounts("completed", "active", "wait")).toEqual({ completed: 3, active: 0, wait: 3 });
  });

  it("when shutdown runs out of time, then in-flight deliveries go back to the queue without spending an attempt", async () => {
    let release = () => {};
    const held = new Promise<void>((ok) => (release = ok));
    const sink = await startSinkServer(async () => {
      await held;
      return {};
    });
    sinks.push(sink);
    harness = await createDispatchHarness(redisUrl, [testRoute("stuck", sink.url, { concurrency: 2, timeoutMs: 30_000 })]);
    const logs = capturedLogger("info");
    const dispatcher = harness.startDispatcher({ shutdownTimeoutMs: 200, logger: logs.logger });
    const events = [userEvent(), userEvent()];
    for (const event of events) await harness.store.store(event, { origin: "webhook" });
    await sink.untilReceived(2);
    await dispatcher.close();

    for (const event of events) {
      const job = await harness.queues.forRoute("stuck").getJob(event.id);
      expect(await job?.getState()).toMatch(/^(delayed|waiting)$/);
      expect(job?.attemptsMade).toBe(0);
    }
    // Each said, naming its event: no attempt was spent, it is sent again.
    const interrupted = logs.lines.filter((line) => line.msg === "delivery interrupted by shutdown; the job goes back to the queue");
    expect(interrupted.map((line) => line.eventId).sort()).toEqual(events.map((event) => event.id).sort());
    for (const line of interrupted) expect(line).toMatchObject({ level: 40, route: "stuck" });
    release();
    harness.startDispatcher();
    await sink.until((requests) => answered(requests).size === 2);
  });

  it("when Redis dies during deliveries, then close() still returns, while Redis is down and the POSTs are still held", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-dispatch-redis-"));
    const redisServer = await startRedisServer({ dir, appendOnly: false });
    const sink = await startSinkServer(() => new Promise<SinkAnswer>(() => {})); // holds every request
    sinks.push(sink);
    const own = await createDispatchHarness(redisServer.url, [testRoute("held", sink.url, { concurrency: 2 })]);
    try {
      const dispatcher = own.startDispatcher({ shutdownTimeoutMs: 200 });
      await own.store.store(userEvent(), { origin: "webhook" });
      await sink.untilReceived(1);
      await redisServer.kill();
      // Its own bounds add up to about 3 s (200 ms, 2 s, 1 s); the point is that it returns
      // at all, with Redis never back and the POST never answered: a hang fails the test
      // at its timeout, a ceiling on the clock would only measure the machine's load.
      await dispatcher.close();
      expect(sink.requests).toHaveLength(1);
    } finally {
      await own.close();
      await redisServer.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});


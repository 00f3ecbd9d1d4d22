import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UnrecoverableError, Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deadLetterPageSize, listDeadLetters } from "../../src/admin/list-dead-letters.js";
import { createDeliveryQueues, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { builtCli } from "../helpers/start-service-process.js";
import { explicitPorts } from "../helpers/explicit-ports.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";

const redisUrl = inject("redisUrl");
const total = 20_000;
const adminToken = "paged-admin-token";

/** The built CLI, its output streamed (a 20,000-line answer is larger than execFile's buffer). */
async function cli(args: string[], env: Record<string, string>, onStdout?: (chunk: string) => void) {
  const child = spawn(process.execPath, [builtCli(), ...args], { env: { PATH: process.env.PATH ?? "", ...explicitPorts(args, env) }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    onStdout?.(chunk);
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, "close")) as [number];
  return { code, stdout, stderr };
}

/** A TCP relay to Redis that a test can cut, as a Redis that goes away mid-command. */
async function startRedisRelay(target: URL) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    cut() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/**
 * A long outage can leave tens of thousands of dead letters: `dead-letters list` and
 * `replay --all` work through them a page at a time, and a Redis that fails half-way
 * fails the command (exit 1) instead of reporting a partial replay as done.
 */
describe("dead letters by the page: 20,000 of them", () => {
  let harness: DispatchHarness;
  let seeding: DeliveryQueues | undefined;
  let dir: string;
  let env: Record<string, string>;
  let service: TestService;

  beforeAll(async () => {
    const route = testRoute("bulk", "http://127.0.0.1:9/", { maxAttemptsPerEvent: 1 });
    harness = await createDispatchHarness(redisUrl, [route]);
    dir = await mkdtemp(join(tmpdir(), "sk-paged-"));
    await writeFile(join(dir, "routes.json"), JSON.stringify([route]));

    // Real failed jobs, quickly: the route's own queue, a worker that refuses every job at once.
    // Seeded over a connection that waits out a loaded Redis (the harness's fails fast).
    const connection = createRedis(redisUrl, "worker");
    seeding = createDeliveryQueues(connection, harness.prefix, [route], { ageSeconds: 60, count: 1000 });
    const queue = seeding.forRoute("bulk");
    for (let start = 0; start < total; start += 500) {
      await queue.addBulk(
        Array.from({ length: 500 }, () => {
          const event = userEvent();
          return { name: event.type, data: { event, origin: "webhook" as const, receivedAt: Date.now() }, opts: { jobId: event.id } };
        }),
      );
    }
    const refuser = new Worker(deliveryQueueName("bulk"), async () => {
      throw new UnrecoverableError("downstream answered 400: schema mismatch");
    }, { connection, prefix: deliveryQueueBullPrefix(harness.prefix, "bulk"), concurrency: 200 });
    while ((await queue.getFailedCount()) < total) await new Promise((ok) => setTimeout(ok, 200));
    await refuser.close();
    // A receiver (no dispatcher: replayed jobs stay waiting, to be counted) serves the admin API.
    service = await startTestService({ QUEUE_PREFIX: harness.prefix, ROUTES_FILE: join(dir, "routes.json"), ADMIN_TOKEN: adminToken }, "receiver");
    env = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, REDIS_URL: "redis://127.0.0.1:9", LOG_LEVEL: "warn" };
  });

  afterAll(async () => {
    await seeding?.close();
    seeding?.connection.disconnect();
    await service?.close();
    await harness?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("when listing, then the dead letters come a page at a time, every one once", async () => {
    const pages: number[] = [];
    const ids = new Set<string>();
    for await (const page of listDeadLetters(seeding!)) {
      pages.push(page.length);
      for (const letter of page) ids.add(letter.jobId);
    }
    expect(ids.size).toBe(total);
    expect(pages).toHaveLength(total / deadLetterPageSize);
    expect(Math.max(...pages)).toBe(deadLetterPageSize);

    const { code, stdout, stderr } = await cli(["dead-letters", "list", "--json"], env);
    expect(code, stderr).toBe(0);
    const letters = JSON.parse(stdout) as { jobId: string; failedReason: string }[];
    expect(new Set(letters.map((letter) => letter.jobId))).toEqual(ids);
    expect(letters[0]!.failedReason).toBe("downstream answered 400: schema mismatch");
  });

  it("when the service's Redis goes away half-way through replay --all, then the command exits 1 with one error line saying how many were replayed", async () => {
    // A second receiver on the same queues, whose Redis is reached through a relay the test cuts.
    const relay = await startRedisRelay(new URL(redisUrl));
    const cutOff = await startTestService({ REDIS_URL: relay.url, QUEUE_PREFIX: harness.prefix, ROUTES_FILE: join(dir, "routes.json"), ADMIN_TOKEN: adminToken }, "receiver");
    const queue = seeding!.forRoute("bulk");
    const before = await queue.getFailedCount();
    try {
      const running = cli(["dead-letters", "replay", "--all"], { ...env, ADMIN_URL: cutOff.adminUrl });
      await expect.poll(() => queue.getFailedCount(), { interval: 10 }).toBeLessThan(before);
      relay.cut();
      const result = await running;
      expect(result.code).toBe(1);
      // One error line, no raw stack trace.
      expect(result.stderr).toMatch(/^error: Redis failed during the replay after \d+ dead letter\(s\) were replayed; the rest were not: replay again once Redis answers\n$/);
      expect(await queue.getFailedCount()).toBeGreaterThan(0);
    } finally {
      await cutOff.close().catch(() => {});
    }
  });

  it("when replaying --all, then every dead letter goes back to its queue with fresh attempts, page by page", async () => {
    const queue = seeding!.forRoute("bulk");
    const left = await queue.getFailedCount();
    const { code, stdout, stderr } = await cli(["dead-letters", "replay", "--all"], env);
    expect(code, stderr).toBe(0);
    expect(stdout.trimEnd().split("\n")).toHaveLength(left);
    expect(await queue.getFailedCount()).toBe(0);
    expect(await queue.getWaitingCount()).toBe(total);
    const [job] = await queue.getWaiting(0, 0);
    expect(job!.attemptsMade).toBe(0);
  });
});

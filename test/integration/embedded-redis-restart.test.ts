import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { registry } from "../../src/metrics/registry.js";
import { answers } from "../../src/redis/redis-server.js";
import { resolveRedis, type ResolvedRedis } from "../../src/redis/resolve-redis.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { useCleanup } from "../helpers/cleanup.js";

const pidOf = async (dataDir: string) => Number((await readFile(join(dataDir, "redis", "redis.pid"), "utf8")).trim());
const restarts = async () => (await registry.getSingleMetric("streamkeeper_embedded_redis_restarts_total")!.get()).values[0]?.value ?? 0;

describe("embedded Redis: restarted when it dies", () => {
  const cleanup = useCleanup("each", { quiet: true });

  it("when the embedded redis-server is SIGKILLed, then it is restarted from its append-only file, its data kept, logged and counted", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-embedded-restart-"));
    const captured = capturedLogger("info");
    const resolved: ResolvedRedis = await resolveRedis(loadConfig({ DATA_DIR: dataDir }), captured.logger, "test");
    cleanup.push(() => resolved.release());
    const socket = join(dataDir, "redis", "redis.sock");
    const client = new Redis({ path: socket, maxRetriesPerRequest: null });
    client.on("error", () => {});
    cleanup.push(async () => client.disconnect());
    await client.set("acknowledged", "before the kill");
    // The append-only file is written before Redis replies; everysec only delays its fsync.
    const first = await pidOf(dataDir);
    const before = await restarts();

    process.kill(first, "SIGKILL");
    await expect.poll(async () => (await answers({ path: socket })) && (await pidOf(dataDir)) !== first, { interval: 100 }).toBe(true);

    expect(await client.get("acknowledged")).toBe("before the kill");
    // The new server answers (and has written its pid file) a moment before the keeper's
    // start call returns and counts it: wait for the count rather than race it.
    await expect.poll(restarts).toBe(before + 1);
    expect(captured.lines.filter((line) => line.msg === "the embedded redis-server had died; restarted it from its append-only file")).toHaveLength(1);
    expect(resolved.healthy?.()).toBe(true);
  });

  let service: TestService | undefined;
  afterEach(async () => {
    await service?.close().catch(() => {});
    service = undefined;
  });

  it("when the embedded redis-server dies and cannot be restarted, then /healthz fails on both ports", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-embedded-dead-"));
    service = await startTestService({ REDIS_URL: "", DATA_DIR: dataDir });
    expect((await fetch(`${service.adminUrl}/healthz`)).status).toBe(200);
    // A damaged manifest: redis-server refuses to start from it.
    await writeFile(join(dataDir, "redis", "appendonlydir", "appendonly.aof.manifest"), "this is not a manifest\n");
    const pid = await pidOf(dataDir);
    process.kill(pid, "SIGKILL");
    await expect.poll(async () => (await fetch(`${service!.adminUrl}/healthz`)).status, { interval: 200 }).toBe(503);
    expect((await fetch(`${service.publicUrl}/healthz`)).status).toBe(503);
    expect(await answers({ path: join(dataDir, "redis", "redis.sock") })).toBe(false);
  });
});

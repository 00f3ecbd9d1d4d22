import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startTestService } from "../helpers/start-test-service.js";
import { tenantEnv } from "./emulator-test-kit.js";
import { until } from "./sweep-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";

const logged = (lines: Array<Record<string, unknown>>, msg: string) => lines.some((line) => String(line.msg).startsWith(msg));

/**
 * "Nothing silent": while Redis is away the sweeper says so once (its lease is taken on a
 * connection that fails fast, not one that queues commands until Redis is back), and once
 * Redis answers again, says that too and sweeps on.
 */
describe("sweep: a Redis outage", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when Redis goes away, then the sweeper logs that it cannot take its lease, and when Redis is back, that it sweeps on", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-sweep-outage-"));
    let redis = await startRedisServer({ dir, appendOnly: false });
    cleanup.push(() => redis.stop());
    // The service's Redis at an address the test holds: the restarted server may bind any free port.
    const redisDoor = await startFrontDoor();
    cleanup.push(() => redisDoor.close());
    redisDoor.open(redis.url);
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    const { logger, lines } = capturedLogger();
    const service = await startTestService({ ...tenantEnv(emulator), REDIS_URL: `redis://127.0.0.1:${redisDoor.port}`, PUBLIC_URL: "http://127.0.0.1:9", RECONCILE_SWEEP_INTERVAL_SECONDS: "1" }, "worker", logger);
    cleanup.push(() => service.close());
    // The first sweep ran: it found no stream pointing at PUBLIC_URL.
    await until("a first sweep", async () => logged(lines, "sweep: no stream of the tenant points at PUBLIC_URL"));

    await redis.kill();
    redisDoor.shut();
    await until("the sweeper saying Redis is away", async () => logged(lines, "sweep: cannot take the sweep lease"), 30_000);

    redis = await startRedisServer({ dir, appendOnly: false });
    redisDoor.open(redis.url);
    await until("the sweeper saying Redis is back", async () => logged(lines, "sweep: Redis answers again"), 60_000);
  });
});

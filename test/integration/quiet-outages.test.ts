import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startRedisServer } from "../../src/redis/redis-server.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService, testCredentials } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";
import { basicAuthorization } from "../helpers/credentials.js";

const sink = { DOWNSTREAM_URL: "http://127.0.0.1:9/" };
const linesOf = (lines: Array<Record<string, unknown>>, msg: string) => lines.filter((line) => String(line.msg).startsWith(msg));

describe("quiet outages: a line per interval with counts, not a line per request", () => {
  const cleanup = useCleanup("all");

  it("when Redis is down and 20 webhooks get 503, then the outage is said once, the 503s in one line with the cause and no stack, not 20", async () => {
    const redis = await startRedisServer({ dir: await mkdtemp(join(tmpdir(), "sk-quiet-")), appendOnly: false });
    cleanup.push(() => redis.stop());
    const { logger, lines } = capturedLogger();
    const service = await startTestService({ ...sink, REDIS_URL: redis.url }, "receiver", logger);
    cleanup.push(() => service.close());
    await redis.kill();

    for (let i = 0; i < 20; i++) expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(503);
    const notStored = linesOf(lines, "webhook not stored");
    expect(notStored).toHaveLength(1);
    // An expected condition, already said by the outage line: its cause, no library stack.
    expect(notStored[0]!.error).toEqual(expect.any(String));
    expect(notStored[0]).not.toHaveProperty("err");
    // Said when the connection's first reconnect is refused, which may come after the 503s.
    await expect.poll(() => linesOf(lines, "Redis does not answer").length).toBeGreaterThan(0);
    expect(linesOf(lines, "Redis does not answer")).toHaveLength(1);
    // The queues meet the same outage and leave it to that line.
    expect(linesOf(lines, "queue: Redis error")).toHaveLength(0);
    expect(JSON.stringify(lines)).not.toContain("stack");
  });

  it("when a tenant sends wrong credentials, then the first refusal is logged at once and the rest as one line per interval with their count", async () => {
    const { logger, lines } = capturedLogger();
    const service = await startTestService({ ...sink, LOG_REPEAT_INTERVAL_SECONDS: "1" }, "receiver", logger);
    cleanup.push(() => service.close());
    const wrong = basicAuthorization(testCredentials.username, "wrong");
    for (let i = 0; i < 20; i++) expect((await service.post("/webhooks", JSON.stringify(userEvent()), { authorization: wrong })).status).toBe(401);
    const refused = () => linesOf(lines, "webhook refused");
    expect(refused()[0]).toMatchObject({ problem: "the Basic credentials are wrong" });
    expect(refused().length).toBeLessThan(20);

    // The summaries come from a timer: wait for them to add up to all 20, never on the clock.
    const counted = () => refused().reduce((sum, line) => sum + (typeof line.occurrences === "number" ? line.occurrences : 1), 0);
    for (const deadline = Date.now() + 15_000; counted() < 20; await new Promise((ok) => setTimeout(ok, 50))) {
      expect(Date.now(), `refusals logged: ${counted()} of 20`).toBeLessThan(deadline);
    }
    expect(counted()).toBe(20);
  });
});

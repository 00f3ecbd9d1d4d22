import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { isRedisUnreachable } from "../../../src/errors/redis-unreachable.js";
import { capturedLogger } from "../../helpers/captured-logger.js";
import { refusedPort } from "../../helpers/explicit-ports.js";

/** Errors as ioredis and Redis raise them, not made up: which say only "Redis cannot be reached" (logged once per outage) and which are faults (logged with their stack). */
describe("isRedisUnreachable", () => {
  const connections: Redis[] = [];
  afterAll(() => {
    for (const connection of connections) connection.disconnect();
  });

  it("when a fail-fast client sends to a port where nothing listens, then its errors (the connection's and the command's) are unreachable ones", async () => {
    const client = createRedis(`redis://127.0.0.1:${refusedPort}`, "client") as Redis;
    connections.push(client);
    const connectionError = await new Promise<Error>((ok) => client.once("error", ok));
    expect(connectionError.message).toMatch(/ECONNREFUSED/);
    expect(isRedisUnreachable(connectionError)).toBe(true);
    const commandError = await client.get("x").then(
      () => undefined,
      (error: Error) => error,
    );
    expect(commandError?.message).toMatch(/Stream isn't writeable|Connection is closed|max retries/);
    expect(isRedisUnreachable(commandError)).toBe(true);
  });

  it("when Redis answers with an error of its own, or the error is not an Error, then it is a fault, not an outage", async () => {
    const client = createRedis(inject("redisUrl"), "client") as Redis;
    connections.push(client);
    await untilReady(client);
    const key = `unreachable-test-${Date.now()}`;
    await client.set(key, "text", "PX", 10_000);
    const wrongType = await client.lpush(key, "x").then(
      () => undefined,
      (error: Error) => error,
    );
    expect(wrongType?.message).toMatch(/^WRONGTYPE/);
    expect(isRedisUnreachable(wrongType)).toBe(false);
    expect(isRedisUnreachable(new Error("cannot read properties of undefined"))).toBe(false);
    expect(isRedisUnreachable("ECONNREFUSED")).toBe(false);
    expect(isRedisUnreachable(undefined)).toBe(false);
  });

  it("when the service's logger is given an unreachable-Redis error, then it logs its message and code without the library's stack; any other error keeps its stack", async () => {
    const client = createRedis(`redis://127.0.0.1:${refusedPort}`, "client") as Redis;
    connections.push(client);
    const refused = await new Promise<Error>((ok) => client.once("error", ok));
    const { logger, lines } = capturedLogger();
    logger.warn({ err: refused }, "outage");
    logger.warn({ err: new Error("a fault of ours") }, "fault");
    expect(lines).toHaveLength(2);
    expect(lines[0]!.err).toMatchObject({ message: refused.message, code: "ECONNREFUSED" });
    expect(lines[0]!.err).not.toHaveProperty("stack");
    expect((lines[1]!.err as { stack: string }).stack).toContain("Error: a fault of ours");
  });
});

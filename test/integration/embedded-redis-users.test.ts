import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { joinEmbeddedRedis, usersKey } from "../../src/redis/embedded-redis-users.js";
import { answers, startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";

const logger = createLogger("silent");
let server: RedisServer | undefined;
let dir: string | undefined;

afterEach(async () => {
  await server?.kill();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A redis-server of its own on a Unix socket: these tests stop it. */
async function embedded(): Promise<{ url: string; socket: string }> {
  dir = await mkdtemp(join(tmpdir(), "sk-users-"));
  const socket = join(dir, "redis.sock");
  server = await startRedisServer({ dir, unixSocket: socket, appendOnly: false });
  return { url: server.url, socket };
}

describe("joinEmbeddedRedis", () => {
  it("when several users leave, then only the last one out is told it is last, and its stop shuts the server down", async () => {
    const { url, socket } = await embedded();
    const first = await joinEmbeddedRedis(url, "a", logger, "host:a");
    const second = await joinEmbeddedRedis(url, "b", logger, "host:b");
    expect([first.others, second.others]).toEqual([0, 1]);
    expect(await first.leave()).toBe(false);
    expect(await second.leave()).toBe(true);
    expect(await second.stopServer()).toBe(true);
    expect(await answers({ path: socket })).toBe(false);
  });

  it("when a user joins between the last one's leave and its stop, then the server keeps running", async () => {
    const { url, socket } = await embedded();
    const leaving = await joinEmbeddedRedis(url, "a", logger, "host:a");
    expect(await leaving.leave()).toBe(true);
    const joining = await joinEmbeddedRedis(url, "b", logger, "host:b");
    expect(await leaving.stopServer()).toBe(false);
    expect(await answers({ path: socket })).toBe(true);
    expect(await joining.leave()).toBe(true);
    expect(await joining.stopServer()).toBe(true);
  });

  it("when a lease's process is gone (kill -9), then it does not count: the next user adopts the server and is the last out", async () => {
    const { url, socket } = await embedded();
    const raw = new Redis({ path: socket });
    // Above Linux's highest pid (2^22): no process has it.
    await raw.hset(usersKey, `${hostname()}:killed`, JSON.stringify({ pid: 2 ** 22 + 1, host: hostname(), who: "start --role all", heartbeatAt: Date.now() }));
    raw.disconnect();
    const adopter = await joinEmbeddedRedis(url, "b", logger, "host:b");
    expect(adopter.others).toBe(0);
    expect(await adopter.leave()).toBe(true);
    expect(await adopter.stopServer()).toBe(true);
    expect(await answers({ path: socket })).toBe(false);
  });
});

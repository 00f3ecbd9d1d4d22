import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { startTestService } from "../helpers/start-test-service.js";

/** Clients of this Redis other than `admin` itself, by name. */
async function otherClients(admin: RedisClient): Promise<string[]> {
  const ownId = String(await admin.client("ID"));
  const list = String(await admin.client("LIST"));
  return list
    .split("\n")
    .filter((line) => line.trim() && !line.startsWith(`id=${ownId} `))
    .map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? "");
}

/** A Redis of its own, so every client on it is this test's (the run's Redis is shared by parallel test files). */
describe("a start that fails half-way", () => {
  let server: RedisServer;
  let admin: RedisClient;
  let taken: Server;

  beforeAll(async () => {
    server = await startRedisServer({ dir: await mkdtemp(join(tmpdir(), "sk-abandon-")), appendOnly: false });
    admin = createRedis(server.url, "client", "test-admin");
    await untilReady(admin);
    taken = createServer();
    await new Promise<void>((ok) => taken.listen(0, "127.0.0.1", ok));
  });
  afterAll(async () => {
    admin?.disconnect();
    await new Promise((ok) => taken?.close(ok));
    await server?.stop();
  });

  it.each(["all", "receiver"] as const)("when ADMIN_PORT is taken (role %s), then the start rejects naming ADMIN_PORT and leaves no Redis connection open", async (role) => {
    const port = (taken.address() as AddressInfo).port;
    const started = startTestService({ REDIS_URL: server.url, ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" }, role);
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow(`ADMIN_PORT ${port} is already in use`);
    // QUIT closes on the server side a moment after it answers: poll, with a generous deadline.
    let clients: string[] = [];
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await new Promise((ok) => setTimeout(ok, 50))) {
      clients = await otherClients(admin);
      if (clients.length === 0) break;
    }
    expect(clients).toEqual([]);
  });

  it("when PORT is taken on a DATA_DIR no service ran on, then the start writes no admin token or webhook credentials there", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-abandon-data-"));
    try {
      const port = (taken.address() as AddressInfo).port;
      // Empty is unset: the start would generate both.
      const started = startTestService({ REDIS_URL: server.url, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", WEBHOOK_USERNAME: "", WEBHOOK_PASSWORD: "" });
      await expect(started).rejects.toThrow(`PORT ${port} is already in use`);
      expect(await readdir(dataDir)).toEqual([]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

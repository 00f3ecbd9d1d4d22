import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listensOn } from "../../helpers/listens-on.js";

// Which process holds a port (test/helpers/start-service-process.ts asks it of a service
// whose /readyz answered): this process's server, not a child's, and not a port no one holds.
describe("listensOn", () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer().listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => void server.close());

  it("when this process listens on a port, then it holds it, and a port it closed is held by no one", async () => {
    expect(await listensOn(process.pid, port)).toBe(true);
    const other = createServer().listen(0, "127.0.0.1");
    await once(other, "listening");
    const closedPort = (other.address() as { port: number }).port;
    other.close();
    await once(other, "close");
    expect(await listensOn(process.pid, closedPort)).toBe(false);
  });

  it("when another process asks about this process's port, then that process does not hold it", async () => {
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"], { stdio: "ignore" });
    try {
      expect(await listensOn(child.pid!, port)).toBe(false);
    } finally {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  });
});

import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../chaos/run-cli.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

/** What an operator tripped over on the second day, each made true (docs/operating.md). */
describe("day-two details", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when ROUTES_FILE lists no route, then the start says that file lists none, not that it is unset", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-empty-routes-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, "routes.yaml");
    await writeFile(file, "routes: []\n");
    await expect(startTestService({ ROUTES_FILE: file })).rejects.toThrow(`ROUTES_FILE ${file} lists no route: add at least one (name, match, url)`);
    await writeFile(file, "[]\n");
    await expect(startTestService({ ROUTES_FILE: file })).rejects.toThrow(`ROUTES_FILE ${file} lists no route: add at least one (name, match, url)`);
  });

  it("when a route without maxAttemptsPerEvent gets a 400, then the dead-letter log line shows the one attempt made, no limit", async () => {
    const refusing = await startSinkServer(() => ({ status: 400, body: "schema mismatch" }));
    cleanup.push(() => refusing.close());
    const logs = capturedLogger();
    const service = await startTestService({ DOWNSTREAM_URL: refusing.url }, "all", logs.logger);
    cleanup.push(() => service.close());
    expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    await expect.poll(() => logs.lines.filter((line) => line.msg === "delivery failed for good: the event is a dead letter of this route").length).toBe(1);
    const line = logs.lines.find((entry) => entry.msg === "delivery failed for good: the event is a dead letter of this route")!;
    expect(line.attempts).toBe(1);
    expect(line.maxAttempts).toBeUndefined();
  });

  it("when the emulator's port is in use, then it exits 2 like the service, with one line saying what to change", async () => {
    const taken = createServer();
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    cleanup.push(() => new Promise((ok) => taken.close(ok)));
    const { port } = taken.address() as AddressInfo;
    const run = await runCli(["emulator", "--port", String(port)], {});
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: port ${port} is in use: pass another with --port or EMULATOR_PORT\n`);
  });
});

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect, createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { keepEmbeddedServer, type KeepEmbeddedServerOptions } from "../../src/redis/keep-embedded-server.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";

/** Whether something accepts a TCP connection at the port now. */
function accepts(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), ok(true)));
    socket.once("error", () => ok(false));
  });
}

/** The restart lock's content, or the error code reading it (ENOENT: no one holds it). */
function lockState(dir: string): Promise<string> {
  return readFile(join(dir, "restart.lock"), "utf8").catch((error: NodeJS.ErrnoException) => error.code ?? "error");
}

async function listen(server: Server, port = 0): Promise<number> {
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  return (server.address() as AddressInfo).port;
}

/**
 * The embedded servers' supervisor (redis/keep-embedded-server.ts) with a real TCP server
 * of this process as the server it keeps: asked at its port, "restarted" by listening on
 * that port again, its restart lock a real file. When a restart comes and when it must
 * not (one miss, a process that runs but does not answer, another process's lock), what is
 * logged and counted, and `healthy()`.
 */
describe("keeping an embedded server", () => {
  const undo = useCleanup("each");

  async function kept(overrides: Partial<KeepEmbeddedServerOptions> = {}) {
    const dir = await mkdtemp(join(tmpdir(), "sk-keep-"));
    undo.push(() => rm(dir, { recursive: true, force: true }));
    let server = createServer((socket) => socket.destroy());
    const port = await listen(server);
    undo.push(() => new Promise<void>((ok) => server.close(() => ok())));
    const log = capturedLogger("debug");
    const counted = { restarts: 0, restartCalls: 0, checks: 0, misses: 0, missesAtRestart: 0, lockAtRestart: "" };
    const answers = overrides.answers ?? (() => accepts(port));
    const keeper = keepEmbeddedServer({
      name: "the test server",
      dir,
      runningPid: async () => undefined,
      restart: async () => {
        counted.restartCalls += 1;
        counted.missesAtRestart = counted.misses;
        counted.lockAtRestart = await lockState(dir);
        server = createServer((socket) => socket.destroy());
        await listen(server, port);
        return { pid: process.pid };
      },
      restarted: () => void (counted.restarts += 1),
      recoversFrom: "its data",
      logger: log.logger,
      checkEveryMs: 20,
      giveUpAfterMs: 300,
      ...overrides,
      answers: async () => {
        counted.checks += 1;
        const up = await answers();
        if (!up) counted.misses += 1;
        return up;
      },
    });
    undo.push(() => keeper.close());
    const stop = () => new Promise<void>((ok) => server.close(() => ok()));
    return { dir, port, keeper, counted, lines: log.lines, stop, server: () => server };
  }

  it("when the server dies, then after two missed checks it is restarted once, counted, warned with its pid and downtime, and the lock is let go", async () => {
    const { dir, port, keeper, counted, lines, stop } = await kept();
    await stop();
    // The warning is the restart's last step.
    await expect.poll(() => lines.filter((line) => line.level === 40)).toHaveLength(1);
    expect(counted.restarts).toBe(1);
    expect(await accepts(port)).toBe(true);
    expect(counted.restartCalls).toBe(1);
    const warned = lines.filter((line) => line.level === 40);
    expect(warned).toEqual([expect.objectContaining({ pid: process.pid, msg: "the test server had died; restarted it from its data" })]);
    expect(warned[0]!.downMs).toEqual(expect.any(Number));
    expect(warned[0]!.downMs as number).toBeGreaterThanOrEqual(0);
    expect(keeper.healthy()).toBe(true);
    await expect.poll(() => lockState(dir)).toBe("ENOENT");
    // Back up: the next checks find it answering, and no further restart or line comes.
    const checked = counted.checks;
    await expect.poll(() => counted.checks).toBeGreaterThan(checked + 5);
    expect(counted.restartCalls).toBe(1);
    expect(lines).toHaveLength(1);
  });

  it("when the server dies, then the restart comes at the second missed check, after one more ask under the lock, with the lock naming this process; downtime as measured", async () => {
    const { counted, lines, stop } = await kept();
    const stoppedAt = Date.now();
    await stop();
    await expect.poll(() => lines.filter((line) => line.level === 40)).toHaveLength(1);
    const measured = Date.now() - stoppedAt;
    // Two checks that miss, then the ask under the lock: the third ask that finds it down.
    expect(counted.missesAtRestart).toBe(3);
    expect(counted.lockAtRestart).toMatch(new RegExp(`^${process.pid} \\d+$`));
    expect(lines[0]!.downMs as number).toBeLessThanOrEqual(measured);
  });

  it("when it misses two checks but answers the ask under the lock, then it is not restarted, and its coming back is logged", async () => {
    let asked = 0;
    const startedAt = Date.now();
    const { counted, lines } = await kept({ answers: async () => ++asked > 2 });
    await expect.poll(() => lines.filter((line) => line.msg === "the test server answers again")).toHaveLength(1);
    expect(counted.restartCalls).toBe(0);
    const measured = Date.now() - startedAt;
    expect(lines[0]!.downMs as number).toBeLessThanOrEqual(measured);
  });

  it("when it is down less than giveUpAfterMs, then it is still healthy", async () => {
    const sleeper = spawn("sleep", ["600"]);
    undo.push(() => void sleeper.kill("SIGKILL"));
    const { lines, keeper, stop } = await kept({ runningPid: async () => sleeper.pid, giveUpAfterMs: 600_000 });
    await stop();
    await expect.poll(() => lines.filter((line) => line.level === 50)).toHaveLength(1);
    expect(keeper.healthy()).toBe(true);
  });

  it("when its restart lock cannot be made (its folder is gone), then the error is logged, not taken as another process's restart", async () => {
    const { dir, lines, stop, counted } = await kept();
    await rm(dir, { recursive: true, force: true });
    await stop();
    await expect.poll(() => lines.filter((line) => line.level === 50)).toEqual([expect.objectContaining({ msg: "the test server is down and cannot be restarted; trying again", err: expect.objectContaining({ code: "ENOENT" }) })]);
    expect(counted.restartCalls).toBe(0);
  });

  it("when another process took this one's lock meanwhile (as stale), then this one leaves that lock in place", async () => {
    const holder = spawn("sleep", ["600"]);
    undo.push(() => void holder.kill("SIGKILL"));
    const theirs = `${holder.pid} ${Date.now()}`;
    const { dir, counted, stop, lines } = await kept({
      restart: async () => {
        counted.restartCalls += 1;
        await writeFile(join(dir, "restart.lock"), theirs);
        return {};
      },
    });
    await stop();
    await expect.poll(() => lines.filter((line) => line.level === 40)).toHaveLength(1);
    expect(await lockState(dir)).toBe(theirs);
  });

  it("when one check is missed and the next answers, then it is not restarted, and its coming back is logged with the time it was down", async () => {
    let answers = 0;
    const { counted, lines, keeper } = await kept({ answers: async () => ++answers !== 2 });
    await expect.poll(() => lines.filter((line) => line.msg === "the test server answers again")).toEqual([expect.objectContaining({ level: 30, downMs: expect.any(Number) })]);
    expect(counted.restartCalls).toBe(0);
    expect(keeper.healthy()).toBe(true);
  });

  it("when its process still runs but does not answer, then no second one is started, the error names the pid, and it turns unhealthy after giveUpAfterMs", async () => {
    const sleeper = spawn("sleep", ["600"]);
    undo.push(() => void sleeper.kill("SIGKILL"));
    const { counted, lines, keeper, stop } = await kept({ runningPid: async () => sleeper.pid });
    expect(keeper.healthy()).toBe(true);
    await stop();
    await expect.poll(() => lines.filter((line) => line.level === 50)).toEqual([
      expect.objectContaining({ pid: sleeper.pid, reason: "its process runs but does not answer; not starting a second one on the same data", msg: "the test server is down and cannot be restarted; trying again" }),
    ]);
    await expect.poll(() => keeper.healthy()).toBe(false);
    expect(counted.restartCalls).toBe(0);
  });

  it("when the restart fails, then the error is logged, the lock let go, it turns unhealthy, and the next checks try again", async () => {
    let calls = 0;
    const { dir, lines, keeper, stop, counted } = await kept({
      restart: async () => {
        calls += 1;
        throw new Error("initdb failed: no space left on device");
      },
    });
    await stop();
    await expect.poll(() => calls).toBeGreaterThanOrEqual(2);
    expect(counted.restarts).toBe(0);
    expect(lines.filter((line) => line.level === 50)[0]).toMatchObject({ msg: "the test server is down and cannot be restarted; trying again", err: expect.objectContaining({ message: "initdb failed: no space left on device" }) });
    await expect.poll(() => keeper.healthy()).toBe(false);
    expect(lines.filter((line) => line.level === 40)).toEqual([]);
    keeper.close();
    // Let go once the check under way ends.
    await expect.poll(() => lockState(dir)).toBe("ENOENT");
  });

  it("when another live process holds the restart lock, then this one leaves the restart to it; a lock of a dead process, or a minute old, is taken", async () => {
    const { dir, counted, stop, keeper, port } = await kept({ checkEveryMs: 20 });
    const lockFile = join(dir, "restart.lock");
    const holder = spawn("sleep", ["600"]);
    undo.push(() => void holder.kill("SIGKILL"));
    const held = `${holder.pid} ${Date.now()}`;
    await writeFile(lockFile, held);
    await stop();
    // Many checks pass, each finding the live holder's lock: no restart, the lock left as it was.
    await expect.poll(() => keeper.healthy()).toBe(false);
    expect(counted.restartCalls).toBe(0);
    expect(await readFile(lockFile, "utf8")).toBe(held);
    // The same holder, its lock a minute old: a restart that died half-way; taken.
    await writeFile(lockFile, `${holder.pid} ${Date.now() - 61_000}`);
    await expect.poll(() => counted.restarts).toBe(1);
    expect(await accepts(port)).toBe(true);
    await expect.poll(() => keeper.healthy()).toBe(true);
  });

  it("when the lock names a process that has gone, then the restart goes ahead", async () => {
    const { dir, counted, stop } = await kept();
    const gone = spawn("true");
    await once(gone, "exit");
    await writeFile(join(dir, "restart.lock"), `${gone.pid} ${Date.now()}`);
    await stop();
    await expect.poll(() => counted.restarts).toBe(1);
  });

  it("when it is closed, then a server that dies afterwards is left down, and it is asked no more", async () => {
    const closed = await kept();
    const open = await kept();
    closed.keeper.close();
    const checked = closed.counted.checks;
    await closed.stop();
    await open.stop();
    // The keeper left open, at the same pace, restarts its own server: two checks and more have passed.
    await expect.poll(() => open.counted.restarts).toBe(1);
    expect(closed.counted.checks).toBeLessThanOrEqual(checked + 1);
    expect(closed.counted.restartCalls).toBe(0);
    expect(closed.lines).toEqual([]);
  });
});

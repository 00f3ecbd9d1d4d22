import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import type { Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, emit, settled } from "./emulator-test-kit.js";
import { until } from "../helpers/until.js";
import { refusedUrl } from "../helpers/explicit-ports.js";
import { builtCli } from "../helpers/start-service-process.js";

const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("EMULATOR_")));

function run(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [builtCli(), ...args], { env: { ...cleanEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = once(child, "close").then(([code]) => code as number | null);
  return { child, exit, stdout: () => stdout, stderr: () => stderr };
}

describe("streamkeeper emulator", () => {
  it("when started with --port, then it prints its URL, serves tokens for the configured client, and stops cleanly on SIGTERM", async () => {
    const cli = run(["emulator", "--port", "0"], { EMULATOR_PORT: "1", EMULATOR_CLIENT_ID: "cli-client", EMULATOR_CLIENT_SECRET: "cli-secret" });
    try {
      await untilListening(cli);
      const url = /^emulator listening on (http:\/\/127\.0\.0\.1:\d+)\n$/.exec(cli.stdout())?.[1];
      expect(url, cli.stdout()).toBeDefined();
      const token = await fetch(`${url}/oauth/token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ grant_type: "client_credentials", client_id: "cli-client", client_secret: "cli-secret", audience: `${url}/api/v2/` }),
      });
      expect(token.status).toBe(200);
    } finally {
      cli.child.kill("SIGTERM");
    }
    expect(await cli.exit).toBe(0);
  });

  it("when EMULATOR_AUTO_DISABLE_AFTER is 2, then a stream is disabled after two failed deliveries, not one", async () => {
    const cli = run(["emulator", "--port", "0"], { EMULATOR_AUTO_DISABLE_AFTER: "2", EMULATOR_TIME_SCALE: "0.01" });
    try {
      await untilListening(cli);
      // The kit's helpers need only the URL of the emulator's control API.
      const emulator = { url: /listening on (\S+)/.exec(cli.stdout())![1]! } as Emulator;
      // Nothing listens there: every attempt fails.
      const streamId = await createStream(emulator, `${refusedUrl}/hook`);
      const status = async () => ((await call(emulator, "GET", `/emulator/streams/${streamId}`)).body as { status: string }).status;
      expect((await settled(emulator, await emit(emulator), 30_000)).status).toBe("failed");
      expect(await status()).toBe("enabled");
      expect((await settled(emulator, await emit(emulator), 30_000)).status).toBe("failed");
      expect(await status()).toBe("disabled");
    } finally {
      cli.child.kill("SIGTERM");
    }
    expect(await cli.exit).toBe(0);
  });

  it("when a setting is bad, then one error line names it and the exit code is 2", async () => {
    const cli = run(["emulator"], { EMULATOR_TIME_SCALE: "-1" });
    expect(await cli.exit).toBe(2);
    expect(cli.stderr()).toMatch(/^error: .*EMULATOR_TIME_SCALE.*\n$/);
    expect(cli.stdout()).toBe("");
  });
});

/** Until the emulator command printed its URL line; fails at once should it exit. */
async function untilListening(cli: { stdout(): string; stderr(): string; child: { exitCode: number | null } }): Promise<void> {
  await until(
    "the emulator prints its URL",
    () => {
      if (cli.child.exitCode !== null) throw new Error(`no URL printed; stderr: ${cli.stderr()}`);
      return cli.stdout().includes("\n");
    },
    { everyMs: 20, detail: () => `no URL printed; stderr: ${cli.stderr()}` },
  );
}

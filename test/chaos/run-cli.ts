import { spawn } from "node:child_process";
import { explicitPorts } from "../helpers/explicit-ports.js";
import { cliEntry } from "../helpers/start-service-process.js";

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one `streamkeeper` command with exactly `env` (plus PATH), ports explicit (explicit-ports.ts); SIGKILLed at the deadline. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<CliRun> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [...cliEntry(), ...args], { env: { PATH: process.env.PATH ?? "", ARCHIVE: "off", ...explicitPorts(args, env) }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      stderr += `\n[test] killed after ${timeoutMs} ms`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      ok({ code, stdout, stderr });
    });
  });
}

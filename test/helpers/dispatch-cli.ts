import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { explicitPorts } from "./explicit-ports.js";
import { builtCli } from "./start-service-process.js";

const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `streamkeeper` binary with exactly these settings (nothing from this process's environment), ports explicit (explicit-ports.ts). */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [builtCli(), ...args], { env: { PATH: process.env.PATH ?? "", ...explicitPorts(args, env) } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { explicitPorts } from "./explicit-ports.js";

const run = promisify(execFile);
const main = "dist/cli/main.js";

/**
 * Builds dist/ (`tsc -p tsconfig.build.json`) unless it is newer than every file under
 * src/ (as after `npm test`'s pretest build). Type errors elsewhere do not stop tsc
 * from emitting, so only a missing output fails.
 */
export async function ensureBuilt(): Promise<void> {
  if (existsSync(main) && (await newestMtime("src")) < (await stat(main)).mtimeMs) return;
  await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"]).catch(() => undefined);
  if (!existsSync(main)) throw new Error(`${main} was not built; run npx tsc -p tsconfig.build.json to see why`);
}

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `streamkeeper` binary with exactly these settings (nothing from this process's environment), ports explicit (explicit-ports.ts). */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [main, ...args], { env: { PATH: process.env.PATH ?? "", ...explicitPorts(args, env) } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { LoadOptions, LoadResult } from "./load-types.js";
import { tsxArgs } from "./start-child.js";

const loadWorker = fileURLToPath(new URL("../processes/load-worker.ts", import.meta.url));

/** Runs one autocannon load in a separate process and returns its figures. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const child = spawn(process.execPath, tsxArgs(loadWorker, [JSON.stringify(options)]), { stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((ok) => child.once("exit", ok));
  const last = output.trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !last) throw new Error(`the load generator exited with code ${code}: ${output.slice(-500)}`);
  return JSON.parse(last) as LoadResult;
}

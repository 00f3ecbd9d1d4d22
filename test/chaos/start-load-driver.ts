import { spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { LoadDriverOptions, LoadProgress, LoadResult } from "./load-driver.js";

export interface LoadDriver {
  /** The last progress line, or zeros before the first. */
  progress(): LoadProgress;
  /** Resolves once the progress line satisfies the predicate; rejects at the deadline or if the driver ends first. */
  until(predicate: (progress: LoadProgress) => boolean, timeoutMs?: number): Promise<LoadProgress>;
  /** Resolves with the driver's result once it has sent everything and every retry ended. */
  finished: Promise<LoadResult>;
  /** SIGKILL, for cleanup after a failed test. */
  kill(): void;
}

const script = resolve(import.meta.dirname, "load-driver.ts");

/**
 * Starts test/chaos/load-driver.ts in its own Node process. Defaults: the tenant's 4
 * attempts (retries after 1, 2, 4 s), 32 requests open at most, 10 s per request.
 */
export async function startLoadDriver(options: Omit<LoadDriverOptions, "outFile" | "retryDelaysMs" | "maxInFlight" | "requestTimeoutMs"> & Partial<LoadDriverOptions>): Promise<LoadDriver> {
  const outFile = options.outFile ?? join(await mkdtemp(join(tmpdir(), "sk-load-")), "result.json");
  const full: LoadDriverOptions = { retryDelaysMs: [1000, 2000, 4000], maxInFlight: 32, requestTimeoutMs: 10_000, ...options, outFile };
  const child = spawn(process.execPath, ["--import", "tsx", script, JSON.stringify(full)], { stdio: ["ignore", "pipe", "pipe"] });
  let last: LoadProgress = { events: 0, acknowledged: 0, unavailable: 0, inFlight: 0 };
  let stderr = "";
  let buffered = "";
  const listeners = new Set<() => void>();
  child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) if (line.startsWith("progress ")) last = JSON.parse(line.slice("progress ".length)) as LoadProgress;
    for (const listener of listeners) listener();
  });
  // "close", not "exit": its last progress lines may still be in the pipe when it exits.
  let closed = false;
  const exited = new Promise<number | null>((ok) =>
    child.once("close", (code) => {
      closed = true;
      ok(code);
    }),
  );
  exited.then(() => listeners.forEach((listener) => listener()));

  const finished = exited.then(async (code) => {
    if (code !== 0) throw new Error(`the load driver exited with ${code}: ${stderr}`);
    return JSON.parse(await readFile(outFile, "utf8")) as LoadResult;
  });
  finished.catch(() => {}); // observed by the test; avoid an unhandled rejection before then

  return {
    progress: () => last,
    finished,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
    until: (predicate, timeoutMs = 30_000) =>
      new Promise((ok, fail) => {
        const check = () => {
          if (predicate(last)) done(() => ok(last));
          else if (closed) done(() => fail(new Error(`the load driver ended before the condition held: ${JSON.stringify(last)} ${stderr}`)));
        };
        const timer = setTimeout(() => done(() => fail(new Error(`load driver: condition not met within ${timeoutMs} ms: ${JSON.stringify(last)}`))), timeoutMs);
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      }),
  };
}

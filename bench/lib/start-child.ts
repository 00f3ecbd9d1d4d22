import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

export interface Child<Info> {
  process: ChildProcess;
  /** what the child printed as its first JSON line (`{"ready":true,...}`) */
  info: Info;
  /** the child's peak resident set (VmHWM) in bytes, read from /proc while it runs */
  peakRssBytes(): number | undefined;
  /** SIGTERM, then SIGKILL after `graceMs` */
  stop(graceMs?: number): Promise<void>;
}

/** `node --import tsx <script>`: bench helpers run from TypeScript sources, like the runner. */
export function tsxArgs(script: string, args: string[] = []): string[] {
  return ["--import", "tsx", script, ...args];
}

/**
 * Starts a helper process and waits for its first stdout line, a JSON object with
 * `ready: true`. Stderr is passed through so a crash is visible.
 */
export async function startChild<Info>(args: string[], timeoutMs = 20_000): Promise<Child<Info>> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const info = await new Promise<Info>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${args.join(" ")} printed no ready line within ${timeoutMs} ms`)), timeoutMs);
    child.once("exit", (code) => fail(new Error(`${args.join(" ")} exited with code ${code} before it was ready`)));
    lines.once("line", (line) => {
      clearTimeout(timer);
      try {
        ok(JSON.parse(line) as Info);
      } catch {
        fail(new Error(`${args.join(" ")} printed "${line}" instead of its ready line`));
      }
    });
  });
  child.stdout!.resume();
  return { process: child, info, peakRssBytes: () => peakRssBytes(child.pid), stop: (graceMs) => stopChild(child, graceMs) };
}

export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** VmHWM of a running process (Linux): the most memory it has held at any point. */
export function peakRssBytes(pid: number | undefined): number | undefined {
  return statusBytes(pid, "VmHWM");
}

/** VmRSS of a running process (Linux): the memory it holds now. */
export function rssBytes(pid: number | undefined): number | undefined {
  return statusBytes(pid, "VmRSS");
}

function statusBytes(pid: number | undefined, field: "VmHWM" | "VmRSS"): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

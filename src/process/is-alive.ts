import { readFileSync } from "node:fs";

/**
 * Whether the process runs. A process of another user answers EPERM: it runs. A killed
 * process not yet reaped by its parent (a zombie, state `Z` in /proc; for good in a
 * container whose PID 1 reaps nothing, or once its parent exited) counts as dead: it
 * holds no socket, no file and no lease, and waiting for it to go would wait forever.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc: trust the signal
  }
}

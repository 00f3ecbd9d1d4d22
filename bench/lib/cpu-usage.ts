import { readFileSync } from "node:fs";

/** Linux clock ticks per second (USER_HZ): 100 on every mainstream kernel build. */
const ticksPerSecond = 100;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    // Field 2 (comm) may hold spaces: split after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/**
 * Starts a CPU meter on some processes; `read()` returns, per name, the cores each kept
 * busy on average since the start (CPU seconds over wall seconds). On a 2-core machine
 * the sum cannot pass 2: it shows where the cores went during a run.
 */
export function startCpuMeter(pids: Record<string, number>): { read(): Record<string, number> } {
  const started = performance.now();
  const before = Object.entries(pids).map(([name, pid]) => [name, pid, cpuSeconds(pid)] as const);
  return {
    read() {
      const seconds = (performance.now() - started) / 1000;
      const cores: Record<string, number> = {};
      for (const [name, pid, from] of before) {
        const to = cpuSeconds(pid);
        if (from !== undefined && to !== undefined) cores[name] = Math.round(((to - from) / seconds) * 100) / 100;
      }
      return cores;
    },
  };
}

/** Cores the whole machine kept busy (every process, from /proc/stat) over `ms`: ≈ 0 when it is idle. */
export async function machineBusyCores(ms = 3000): Promise<number | undefined> {
  const read = () => {
    try {
      const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
      // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
      const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
      return (user + nice + system + irq + softirq + steal) / ticksPerSecond;
    } catch {
      return undefined;
    }
  };
  const before = read();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = read();
  return before === undefined || after === undefined ? undefined : Math.round(((after - before) / (ms / 1000)) * 100) / 100;
}

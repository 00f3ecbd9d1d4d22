import { readdirSync, readFileSync } from "node:fs";

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

/** Read and write system calls a process has made so far (every thread), from /proc/<pid>/io. */
export function syscalls(pid: number): number | undefined {
  try {
    const io = readFileSync(`/proc/${pid}/io`, "utf8");
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, "m").exec(io)?.[1] ?? NaN);
    const total = field("syscr") + field("syscw");
    return Number.isNaN(total) ? undefined : total;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds a process and its children have used so far: its own, its waited-for
 * children's (cutime, cstime: a backend that exited), and each live child's with theirs.
 * For a server that forks a process per connection (Postgres).
 */
export function treeCpuSeconds(pid: number): number | undefined {
  const withChildren = (stat: string[]) => (Number(stat[11]) + Number(stat[12]) + Number(stat[13]) + Number(stat[14])) / ticksPerSecond;
  const own = statFields(pid);
  if (!own) return undefined;
  let total = withChildren(own);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const child = statFields(Number(entry));
    if (child && Number(child[1]) === pid) total += withChildren(child);
  }
  return total;
}

/** /proc/<pid>/stat's fields after the command name (index 0: state, 1: ppid, 11: utime, ...). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/**
 * What each process spent from now until `per(events)`: CPU microseconds and read/write
 * system calls per event. Calls are counted, not timed, so they hold still on a busy machine,
 * and show what batching saves (each is a trip through the kernel, on loopback also the
 * other end's wakeup).
 */
export function startCostMeter(pids: Record<string, number>, trees: Record<string, number> = {}): { per(events: number): Record<string, { cpuUs: number; syscalls: number }> } {
  const before = [
    ...Object.entries(pids).map(([name, pid]) => [name, pid, cpuSeconds, cpuSeconds(pid), syscalls(pid)] as const),
    // A tree's system calls are its main process's alone: a figure of the CPU only.
    ...Object.entries(trees).map(([name, pid]) => [name, pid, treeCpuSeconds, treeCpuSeconds(pid), syscalls(pid)] as const),
  ];
  return {
    per(events) {
      const costs: Record<string, { cpuUs: number; syscalls: number }> = {};
      for (const [name, pid, cpu, cpuFrom, callsFrom] of before) {
        const [cpuTo, callsTo] = [cpu(pid), syscalls(pid)];
        if (cpuFrom === undefined || cpuTo === undefined || callsFrom === undefined || callsTo === undefined || events === 0) continue;
        costs[name] = { cpuUs: Math.round(((cpuTo - cpuFrom) / events) * 1e6), syscalls: Math.round(((callsTo - callsFrom) / events) * 100) / 100 };
      }
      return costs;
    },
  };
}

/**
 * Starts a CPU meter on some processes; `read()` returns, per name, the cores each kept
 * busy on average since the start (CPU seconds over wall seconds), and `other`: the rest
 * of the machine (other people's work, the bench runner). On a 2-core machine the sum
 * cannot pass 2: it shows where the cores went during a run.
 */
export function startCpuMeter(pids: Record<string, number>): { read(): Record<string, number> } {
  const started = performance.now();
  const machineBefore = machineCpuSeconds();
  const before = Object.entries(pids).map(([name, pid]) => [name, pid, cpuSeconds(pid)] as const);
  return {
    read() {
      const seconds = (performance.now() - started) / 1000;
      const share = (cpu: number) => Math.round((cpu / seconds) * 100) / 100;
      const cores: Record<string, number> = {};
      let named = 0;
      for (const [name, pid, from] of before) {
        const to = cpuSeconds(pid);
        if (from === undefined || to === undefined) continue;
        cores[name] = share(to - from);
        named += to - from;
      }
      const machineAfter = machineCpuSeconds();
      if (machineBefore !== undefined && machineAfter !== undefined) cores.other = Math.max(0, share(machineAfter - machineBefore - named));
      return cores;
    },
  };
}

/** CPU seconds the whole machine has been busy (every process, from /proc/stat). */
function machineCpuSeconds(): number | undefined {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
    return (user + nice + system + irq + softirq + steal) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** Cores the whole machine kept busy over `ms`: ≈ 0 when it is idle. */
export async function machineBusyCores(ms = 3000): Promise<number | undefined> {
  const before = machineCpuSeconds();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = machineCpuSeconds();
  return before === undefined || after === undefined ? undefined : Math.round(((after - before) / (ms / 1000)) * 100) / 100;
}

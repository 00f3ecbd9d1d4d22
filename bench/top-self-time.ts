import { readFile } from "node:fs/promises";

/**
 * Prints the functions with the most self time in a `node --cpu-prof` profile:
 *   node --import tsx bench/top-self-time.ts bench/results/service-receiver-*.cpuprofile [count]
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, countArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write("error: give a .cpuprofile file: node --import tsx bench/top-self-time.ts <file> [count]\n");
  process.exit(2);
}
const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMicros = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, index) => {
  const node = byId.get(id)!;
  const delta = profile.timeDeltas[index] ?? 0;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${url.replace(/^.*node_modules\//, "~/").replace(/^file:\/\/.*\/(dist|src)\//, "$1/")}:${lineNumber + 1}` : "";
  const key = `${functionName || "(anonymous)"} ${where}`.trim();
  selfMicros.set(key, (selfMicros.get(key) ?? 0) + delta);
  total += delta;
});
const busy = total - (selfMicros.get("(idle)") ?? 0);
process.stdout.write(`total ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s\n`);
for (const [key, micros] of [...selfMicros].sort((a, b) => b[1] - a[1]).slice(0, Number(countArg ?? 30))) {
  process.stdout.write(`${((micros / total) * 100).toFixed(1).padStart(5)} %  ${(micros / 1000).toFixed(0).padStart(7)} ms  ${key}\n`);
}

/**
 * The folder boundaries of STYLE.md, checked on every `npm run lint`: who may
 * import whom inside src/, and no import cycles. Imports are read as text (static,
 * re-exports and dynamic `import()`), which is all this codebase uses.
 *
 *   npx tsx scripts/check-boundaries.ts [src-dir]
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

interface Rule {
  /** what the rule keeps, as the error says it */
  why: string;
  /** the files it applies to (paths relative to src/) */
  applies(file: string): boolean;
  /** true when `file` may not import `target` (a src-relative path, or a package name) */
  forbids(target: string, file: string): boolean;
}

const inFolder = (folder: string) => (file: string) => file.startsWith(`${folder}/`);
const isPackage = (target: string, ...names: string[]) => names.some((name) => target === name || target.startsWith(`${name}/`));

export const rules: Rule[] = [
  {
    why: "Express is known only in http/ (the emulator is a program of its own)",
    applies: (file) => !inFolder("http")(file) && !inFolder("emulator")(file),
    forbids: (target) => isPackage(target, "express", "@bull-board/express", "@bull-board/api"),
  },
  {
    why: "the emulator is imported by nothing of the service (only by its own command and the demo)",
    applies: (file) => !inFolder("emulator")(file) && file !== "cli/emulator-command.ts" && !inFolder("demo")(file),
    forbids: (target) => inFolder("emulator")(target),
  },
  {
    why: "tenant/ talks to the tenant and knows nothing of Redis",
    applies: inFolder("tenant"),
    forbids: (target) => isPackage(target, "ioredis", "bullmq") || inFolder("queue")(target),
  },
  {
    why: "admin/ reads what the delivery path wrote; the delivery path never depends on it",
    applies: (file) => inFolder("queue")(file) || inFolder("dispatch")(file) || inFolder("events")(file),
    forbids: (target) => inFolder("admin")(target),
  },
  {
    why: "queue/ stores and queues events; delivering them is dispatch/'s job",
    applies: inFolder("queue"),
    forbids: (target) => inFolder("dispatch")(target),
  },
  {
    why: "metrics/ lies beneath the parts: it imports nothing of ours but events/ and the top-level leaves (each part registers its own gauges)",
    applies: inFolder("metrics"),
    // The emulator has a rule of its own, which says it.
    forbids: (target) => target.endsWith(".ts") && target.includes("/") && !["metrics", "events", "emulator"].some((folder) => inFolder(folder)(target)),
  },
  {
    why: "upgrade/ (an earlier release's key layout) is deleted as a unit: only app.ts and the event view's job lookup use it",
    applies: (file) => !inFolder("upgrade")(file) && file !== "app.ts" && file !== "admin/describe-event.ts",
    forbids: (target) => inFolder("upgrade")(target),
  },
];

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** Every import of one file: package names as written, project files as src-relative paths. */
export function importsOf(source: string, file: string): string[] {
  const targets: string[] = [];
  for (const match of source.matchAll(importPattern)) {
    const specifier = match[1] ?? match[2]!;
    if (!specifier.startsWith(".")) targets.push(specifier);
    else targets.push(join(dirname(file), specifier).replace(/\.js$/, ".ts"));
  }
  return targets;
}

function filesUnder(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(root, path);
    return entry.name.endsWith(".ts") ? [relative(root, path)] : [];
  });
}

/** Every violation in the tree at `root`, one line each. */
export function checkBoundaries(root: string): string[] {
  const graph = new Map<string, string[]>();
  for (const file of filesUnder(root)) graph.set(file, importsOf(readFileSync(join(root, file), "utf8"), file));
  const problems: string[] = [];
  for (const [file, targets] of graph) {
    for (const target of targets) {
      for (const rule of rules) if (rule.applies(file) && rule.forbids(target, file)) problems.push(`src/${file} imports ${target}: ${rule.why}`);
    }
  }
  return [...problems, ...cyclesOf(graph).map((cycle) => `import cycle: ${cycle.map((file) => `src/${file}`).join(" -> ")}`)];
}

/** Each cycle once, as the path that closes it (depth-first, colouring files as visited). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (state.get(target) === "open") cycles.push([...stack.slice(stack.indexOf(target)), target]);
      else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return cycles;
}

if (process.argv[1]?.endsWith("check-boundaries.ts")) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, "../src"));
  const problems = checkBoundaries(root);
  for (const problem of problems) process.stderr.write(`error: ${problem}\n`);
  if (problems.length > 0) {
    process.stderr.write(`${problems.length} boundary violation(s): see STYLE.md "What that means here" and docs/architecture.md\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`boundaries: ${filesUnder(root).length} files checked, no violation, no import cycle\n`);
  }
}

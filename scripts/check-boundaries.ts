/**
 * The folder boundaries, checked on every `npm run lint`: who may import whom inside
 * src/ (the arrows of docs/architecture.md, "Who imports whom", and the rules below), and
 * no import cycles. Imports are read as text (static, re-exports and dynamic `import()`),
 * which is all this codebase uses.
 *
 *   npx tsx scripts/check-boundaries.ts [src-dir] [architecture-doc]
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
    why: "upgrade/ (an earlier release's key layout) is deleted as a unit: only app.ts and the event view's job lookup use it",
    applies: (file) => !inFolder("upgrade")(file) && file !== "app.ts" && file !== "admin/describe-event.ts",
    forbids: (target) => inFolder("upgrade")(target),
  },
];

const importPattern = /(?:^|\n)\s*((?:import|export)\s[^;]*?)from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

export interface Import {
  /** a src-relative path, or a package name as written */
  target: string;
  /** `import type`, `export type`, or braces holding only `type` names: gone once compiled */
  typeOnly: boolean;
}

/** Whether the clause before `from` brings in types only. */
function isTypeOnly(clause: string): boolean {
  if (/^(?:import|export)\s+type\s/.test(clause)) return true;
  const names = /^(?:import|export)\s*\{([^}]*)\}\s*$/.exec(clause.trim())?.[1];
  if (names === undefined) return false;
  const parts = names.split(",").map((part) => part.trim()).filter((part) => part !== "");
  return parts.length > 0 && parts.every((part) => part.startsWith("type "));
}

/** Every import of one file, with whether it is type-only. */
export function importsWithKindOf(source: string, file: string): Import[] {
  const imports: Import[] = [];
  for (const match of source.matchAll(importPattern)) {
    const specifier = match[2] ?? match[3]!;
    const target = specifier.startsWith(".") ? join(dirname(file), specifier).replace(/\.js$/, ".ts") : specifier;
    imports.push({ target, typeOnly: match[1] !== undefined && isTypeOnly(match[1]) });
  }
  return imports;
}

/** Every import of one file: package names as written, project files as src-relative paths. */
export function importsOf(source: string, file: string): string[] {
  return importsWithKindOf(source, file).map((entry) => entry.target);
}

function filesUnder(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(root, path);
    return entry.name.endsWith(".ts") ? [relative(root, path)] : [];
  });
}

/** Every import of every file of the tree at `root`. */
function importGraph(root: string): Map<string, Import[]> {
  const graph = new Map<string, Import[]>();
  for (const file of filesUnder(root)) graph.set(file, importsWithKindOf(readFileSync(join(root, file), "utf8"), file));
  return graph;
}

/**
 * Every violation in the tree at `root`, one line each. With the architecture document's
 * text, an import between parts that the document draws no arrow for is one too.
 */
export function checkBoundaries(root: string, architectureDoc?: string): string[] {
  const withKinds = importGraph(root);
  const graph = new Map([...withKinds].map(([file, imports]) => [file, imports.map((entry) => entry.target)]));
  const problems: string[] = architectureDoc === undefined ? [] : arrowProblems(readArrows(architectureDoc), withKinds).forbidden;
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

/**
 * The part of src/ a file belongs to: its top folder, or the file itself at the top (only
 * app.ts, the composition root, is there: docs/architecture.md, "Who imports whom"). Every
 * part needs an arrow to be imported, whatever it holds: there are no leaves.
 */
export function partOf(file: string): string {
  return file.includes("/") ? file.slice(0, file.indexOf("/")) : file;
}

/** One arrow's kind: "value" (any import) or "types" (type-only imports only). */
export type ArrowKind = "value" | "types";

/** The arrows of the document: part -> (part it imports -> kind). */
export type Arrows = Map<string, Map<string, ArrowKind>>;

/**
 * Reads the arrow lines of docs/architecture.md: the first fenced block after the
 * heading "Who imports whom", one line per part, `part -> a, b (types), c`, `-` for none.
 */
export function readArrows(doc: string): Arrows {
  const section = doc.slice(doc.indexOf("## Who imports whom"));
  const block = /```[a-z]*\n([\s\S]*?)```/.exec(section)?.[1];
  if (!section.startsWith("## Who imports whom") || block === undefined) throw new Error('docs/architecture.md needs a heading "## Who imports whom" followed by a fenced block of arrows');
  const arrows: Arrows = new Map();
  for (const line of block.split("\n")) {
    const match = /^([A-Za-z0-9_.-]+)\s+->\s*(.*)$/.exec(line.trim());
    if (match === null) continue;
    const targets = new Map<string, ArrowKind>();
    for (const entry of match[2]!.split(",").map((item) => item.trim())) {
      if (entry === "-" || entry === "") continue;
      const named = /^([A-Za-z0-9_.-]+)(\s+\(types\))?$/.exec(entry);
      if (named === null) throw new Error(`docs/architecture.md: "${entry}" in the arrow line of ${match[1]} is not a part name, optionally followed by " (types)"`);
      targets.set(named[1]!, named[2] === undefined ? "value" : "types");
    }
    arrows.set(match[1]!, targets);
  }
  return arrows;
}

/** The arrows the code draws: every import from one part into another. */
export function arrowsOfCode(graph: Map<string, Import[]>): Arrows {
  const arrows: Arrows = new Map();
  for (const [file, imports] of graph) {
    const from = partOf(file);
    const targets = arrows.get(from) ?? new Map<string, ArrowKind>();
    arrows.set(from, targets);
    for (const { target, typeOnly } of imports) {
      if (!graph.has(target)) continue;
      const to = partOf(target);
      if (to === from) continue;
      targets.set(to, typeOnly && targets.get(to) !== "value" ? "types" : "value");
    }
  }
  return arrows;
}

const arrowText = (from: string, to: string, kind: ArrowKind) => `${from} -> ${to}${kind === "types" ? " (types)" : ""}`;

/**
 * Where the document and the code disagree. `forbidden`: the code imports what the document
 * does not allow (a missing arrow, or a value import where the arrow says types): the lint
 * fails. `stale`: the document draws what the code no longer does (or draws a value arrow
 * for types only, or a part that is gone): the unit test fails, so the map stays drawn
 * from the code.
 */
export function arrowProblems(documented: Arrows, graph: Map<string, Import[]>): { forbidden: string[]; stale: string[] } {
  const forbidden: string[] = [];
  const stale: string[] = [];
  const code = arrowsOfCode(graph);
  for (const [file, imports] of graph) {
    const from = partOf(file);
    for (const { target, typeOnly } of imports) {
      if (!graph.has(target)) continue;
      const to = partOf(target);
      if (to === from) continue;
      const allowed = documented.get(from)?.get(to);
      if (!documented.has(from)) forbidden.push(`src/${file} imports ${target}: src/${from}${from.endsWith(".ts") ? "" : "/"} has no arrow line in docs/architecture.md ("Who imports whom"); add one: ${arrowText(from, to, typeOnly ? "types" : "value")}`);
      else if (allowed === undefined) forbidden.push(`src/${file} imports ${target}: docs/architecture.md draws no arrow ${from} -> ${to} ("Who imports whom")`);
      else if (allowed === "types" && !typeOnly) forbidden.push(`src/${file} imports ${target} for more than its types: docs/architecture.md allows only ${arrowText(from, to, "types")}`);
    }
  }
  for (const [from, targets] of documented) {
    if (!code.has(from)) {
      stale.push(`docs/architecture.md draws ${from}, which is not in src/ or imports no part`);
      continue;
    }
    for (const [to, kind] of targets) {
      const actual = code.get(from)?.get(to);
      if (actual === undefined) stale.push(`docs/architecture.md draws ${arrowText(from, to, kind)}, which the code no longer imports`);
      else if (actual !== kind) stale.push(`docs/architecture.md draws ${arrowText(from, to, kind)}, but the code's imports are ${actual === "types" ? "types only" : "values"}: write ${arrowText(from, to, actual)}`);
    }
  }
  for (const [from, targets] of code) {
    if (documented.has(from)) continue;
    if (targets.size === 0 && !from.endsWith(".ts")) stale.push(`src/${from}/ has no arrow line in docs/architecture.md ("Who imports whom"); add: ${from} -> -`);
  }
  return { forbidden: [...new Set(forbidden)], stale };
}

/** The arrows of the real tree against the real document: what the unit test compares. */
export function compareArchitecture(root: string, doc: string): { forbidden: string[]; stale: string[] } {
  return arrowProblems(readArrows(doc), importGraph(root));
}

if (process.argv[1]?.endsWith("check-boundaries.ts")) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, "../src"));
  const docPath = resolve(process.argv[3] ?? join(import.meta.dirname, "../docs/architecture.md"));
  const doc = readFileSync(docPath, "utf8");
  const problems = checkBoundaries(root, doc);
  for (const stale of compareArchitecture(root, doc).stale) process.stderr.write(`warning: ${stale}\n`);
  for (const problem of problems) process.stderr.write(`error: ${problem}\n`);
  if (problems.length > 0) {
    process.stderr.write(`${problems.length} boundary violation(s): see docs/architecture.md, "Who imports whom" and "Rules the build keeps"\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`boundaries: ${filesUnder(root).length} files checked, no violation, no import cycle\n`);
  }
}

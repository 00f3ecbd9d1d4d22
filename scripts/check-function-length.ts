/**
 * No function in src/ over 120 lines, factories included: a function that long does
 * several jobs, and each job reads better as a function of its own. A line counts when it
 * holds code: blank lines and comments are free, so the rule never argues against saying
 * why. Checked on every `npm run lint` with the TypeScript compiler's own parser
 * (functions, methods, arrow functions and function expressions, wherever nested).
 *
 *   npx tsx scripts/check-function-length.ts [src-dir] [max-lines]
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

export interface LongFunction {
  /** the function's name, or how it is used when it has none */
  name: string;
  /** 1-based line where it starts */
  line: number;
  /** lines holding code, from its first line to its last */
  lines: number;
}

/** Every function of one source text with more than `maxLines` lines of code. */
export function longFunctions(source: string, fileName: string, maxLines: number): LongFunction[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const lines = codeLines(node, file);
      if (lines > maxLines) found.push({ name: nameOf(node), line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Lines on which a token of the node lies (a multi-line template string counts every line it spans). */
function codeLines(node: ts.Node, file: ts.SourceFile): number {
  const lines = new Set<number>();
  const mark = (child: ts.Node): void => {
    // A doc comment is a child node too: a comment, not code.
    if (child.kind >= ts.SyntaxKind.FirstJSDocNode && child.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = child.getChildren(file);
    if (children.length > 0) return children.forEach(mark);
    if (child.kind === ts.SyntaxKind.EndOfFileToken) return;
    const first = file.getLineAndCharacterOfPosition(child.getStart(file)).line;
    const last = file.getLineAndCharacterOfPosition(child.getEnd()).line;
    for (let line = first; line <= last; line++) lines.add(line);
  };
  mark(node);
  return lines.size;
}

function nameOf(node: ts.Node): string {
  const named = (node as { name?: ts.Node }).name;
  if (named && (ts.isIdentifier(named) || ts.isStringLiteral(named) || ts.isPrivateIdentifier(named))) return named.text;
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isCallExpression(parent)) return `callback of ${parent.expression.getText().slice(0, 40)}`;
  return "(anonymous function)";
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const src = resolve(process.argv[2] ?? "src");
  const maxLines = Number(process.argv[3] ?? 120);
  const problems = sourceFiles(src).flatMap((path) =>
    longFunctions(readFileSync(path, "utf8"), path, maxLines).map(
      (fn) => `${relative(process.cwd(), path)}:${fn.line}: ${fn.name} is ${fn.lines} lines, over ${maxLines}: split it into functions that each do one job`,
    ),
  );
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) process.exit(1);
}

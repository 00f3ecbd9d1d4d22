import { join } from "node:path";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { longFunctions } from "../../scripts/check-function-length.js";

function body(lines: number, comment = false): string {
  return Array.from({ length: lines }, (_, at) => (comment ? `  // why ${at}` : `  const v${at} = ${at};`)).join("\n");
}

describe("check-function-length", () => {
  it("when the project's own src/ is checked, then no function has over 120 lines of code", () => {
    const src = join(import.meta.dirname, "../../src");
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter((path) => path.endsWith(".ts"));
    const long = files.flatMap((path) => longFunctions(readFileSync(join(src, path), "utf8"), path, 120).map((fn) => `${path}:${fn.line} ${fn.name} ${fn.lines}`));
    expect(long).toEqual([]);
  });

  it("when the composition root is read, then it holds at most 100 lines: it only maps a role to its parts and their stop order", () => {
    const lines = readFileSync(join(import.meta.dirname, "../../src/app.ts"), "utf8").trimEnd().split("\n");
    expect(lines.length).toBeLessThanOrEqual(100);
  });

  it("when a factory's inner arrow function is over the limit, then both are named with their line and length", () => {
    const source = `export function createThing() {\n  const run = () => {\n${body(10)}\n  };\n  return { run };\n}\n`;
    expect(longFunctions(source, "thing.ts", 5)).toEqual([
      { name: "createThing", line: 1, lines: 15 },
      { name: "run", line: 2, lines: 12 },
    ]);
  });

  it("when a function is long only by its comments and blank lines, then it is within the limit", () => {
    const source = `/** Doc\n * comment */\nexport function quiet() {\n${body(30, true)}\n\n\n  return 1;\n}\n`;
    expect(longFunctions(source, "quiet.ts", 5)).toEqual([]);
  });

  it("when a method of an object literal or class is over the limit, then it is found by its name", () => {
    const source = `const o = {\n  handle() {\n${body(6)}\n  },\n};\nclass C {\n  go() {\n${body(6)}\n  }\n}\n`;
    expect(longFunctions(source, "o.ts", 5).map((fn) => fn.name)).toEqual(["handle", "go"]);
  });
});

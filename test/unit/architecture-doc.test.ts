import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");

describe("docs/architecture.md", () => {
  it("when a folder exists in src/, then the module map describes it and names it in the arrow list, and names no folder that is gone", () => {
    const doc = readFileSync(join(root, "docs/architecture.md"), "utf8");
    const folders = readdirSync(join(root, "src"), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
    for (const folder of folders) {
      expect(doc, `a paragraph for src/${folder}/`).toContain(`**\`${folder}/\`**`);
      expect(doc, `an arrow line for src/${folder}/`).toMatch(new RegExp(`^${folder} +->`, "m"));
    }
    const described = [...doc.matchAll(/\*\*`([a-z-]+)\/`\*\*/g)].map((match) => match[1]).sort();
    expect(described).toEqual(folders);
  });
});

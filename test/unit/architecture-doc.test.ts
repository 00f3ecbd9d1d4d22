import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkBoundaries, compareArchitecture, readArrows } from "../../scripts/check-boundaries.js";
import { useCleanup } from "../helpers/cleanup.js";
import { writeTree } from "../helpers/write-tree.js";

const root = join(import.meta.dirname, "../..");
const doc = readFileSync(join(root, "docs/architecture.md"), "utf8");
const cleanup = useCleanup("each");
const tree = (files: Record<string, string>) => writeTree(files, cleanup);

const arrowsDoc = (lines: string) => `# map\n\n## Who imports whom\n\n\`\`\`\n${lines}\n\`\`\`\n`;

describe("docs/architecture.md", () => {
  it("when a folder exists in src/, then the module map describes it and names it in the arrow list, and names no folder that is gone", () => {
    const folders = readdirSync(join(root, "src"), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
    for (const folder of folders) {
      expect(doc, `a paragraph for src/${folder}/`).toContain(`**\`${folder}/\`**`);
      expect(doc, `an arrow line for src/${folder}/`).toMatch(new RegExp(`^${folder} +->`, "m"));
    }
    const described = [...doc.matchAll(/\*\*`([a-z-]+)\/`\*\*/g)].map((match) => match[1]).sort();
    expect(described).toEqual(folders);
  });

  it("when the code's imports are compared with the document's arrows, then every arrow is drawn from the code and every import has its arrow", () => {
    expect(compareArchitecture(join(root, "src"), doc)).toEqual({ forbidden: [], stale: [] });
  });

  it("when src/ is listed, then app.ts, the composition root, is its only module at the top: every other one is in a folder that says what it is for", () => {
    const modules = readdirSync(join(root, "src")).filter((name) => name.endsWith(".ts"));
    expect(modules, "docs/architecture.md, No leaves").toEqual(["app.ts"]);
  });

  it("when a folder imports a part its line does not name, a module at the top of src/ as much as a folder, then the lint names the file, the import and the arrow to draw", async () => {
    const src = await tree({
      "metrics/gauge.ts": 'import { store } from "../queue/store.js";\nimport { log } from "../logger.js";\nexport const gauge = [store, log];\n',
      "queue/store.ts": "export const store = 1;\n",
      "logger.ts": "export const log = 1;\n",
    });
    expect(checkBoundaries(src, arrowsDoc("metrics -> -\nqueue -> -"))).toEqual([
      'src/metrics/gauge.ts imports queue/store.ts: docs/architecture.md draws no arrow metrics -> queue ("Who imports whom")',
      'src/metrics/gauge.ts imports logger.ts: docs/architecture.md draws no arrow metrics -> logger.ts ("Who imports whom")',
    ]);
    expect(checkBoundaries(src, arrowsDoc("metrics -> queue, logger.ts\nqueue -> -"))).toEqual([]);
  });

  it("when an arrow allows only types and a file imports a value, then the lint refuses it, and a type import passes", async () => {
    const typeOnly = await tree({
      "metrics/gauge.ts": 'import type { Store } from "../queue/store.js";\nimport { type Other } from "../queue/store.js";\nexport type G = Store | Other;\n',
      "queue/store.ts": "export type Store = 1;\nexport type Other = 2;\n",
    });
    expect(checkBoundaries(typeOnly, arrowsDoc("metrics -> queue (types)\nqueue -> -"))).toEqual([]);
    const value = await tree({
      "metrics/gauge.ts": 'import { store, type Store } from "../queue/store.js";\nexport const g: Store = store;\n',
      "queue/store.ts": "export type Store = 1;\nexport const store = 1;\n",
    });
    expect(checkBoundaries(value, arrowsDoc("metrics -> queue (types)\nqueue -> -"))).toEqual([
      "src/metrics/gauge.ts imports queue/store.ts for more than its types: docs/architecture.md allows only metrics -> queue (types)",
    ]);
  });

  it("when a new folder has no line, then the lint says to add one; when the document draws what the code does not, then the comparison names each stale arrow", async () => {
    const src = await tree({
      "upgrade/drain.ts": 'import { store } from "../queue/store.js";\nexport const drain = store;\n',
      "queue/store.ts": "export const store = 1;\n",
      "events/parse.ts": "export const parse = 1;\n",
    });
    expect(checkBoundaries(src, arrowsDoc("queue -> events\nevents -> -"))).toEqual([
      'src/upgrade/drain.ts imports queue/store.ts: src/upgrade/ has no arrow line in docs/architecture.md ("Who imports whom"); add one: upgrade -> queue',
    ]);
    const documented = arrowsDoc("upgrade -> queue (types)\nqueue -> events\nevents -> -\ngone -> queue");
    expect(readArrows(documented).get("upgrade")).toEqual(new Map([["queue", "types"]]));
    expect(compareArchitecture(src, documented).stale).toEqual([
      "docs/architecture.md draws upgrade -> queue (types), but the code's imports are values: write upgrade -> queue",
      "docs/architecture.md draws queue -> events, which the code no longer imports",
      "docs/architecture.md draws gone, which is not in src/ or imports no part",
    ]);
  });
});

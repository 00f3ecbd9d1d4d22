import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkBoundaries, importsOf } from "../../scripts/check-boundaries.js";
import { useCleanup } from "../helpers/cleanup.js";
import { writeTree } from "../helpers/write-tree.js";

describe("check-boundaries", () => {
  const cleanup = useCleanup("each");
  const tree = (files: Record<string, string>) => writeTree(files, cleanup);

  it("when the project's own src/ is checked, then it keeps every boundary", () => {
    expect(checkBoundaries(join(import.meta.dirname, "../../src"))).toEqual([]);
  });

  it("when a file imports across a boundary, then the violation names the file, the import and the rule", async () => {
    const root = await tree({
      "queue/store.ts": 'import { deliver } from "../dispatch/deliver.js";\n',
      "dispatch/deliver.ts": "export const deliver = 1;\n",
      "tenant/client.ts": 'import type { Redis } from "ioredis";\n',
      "reconcile/api.ts": 'import express from "express";\n',
      "metrics/x.ts": 'const m = await import("../emulator/start.js");\n',
      "emulator/start.ts": "export {};\n",
      "cli/emulator-command.ts": 'import "../emulator/start.js";\nimport { x } from "../emulator/start.js";\n',
    });
    expect(checkBoundaries(root).sort()).toEqual([
      "src/metrics/x.ts imports emulator/start.ts: the emulator is imported by nothing of the service (only by its own command and the demo)",
      "src/queue/store.ts imports dispatch/deliver.ts: queue/ stores and queues events; delivering them is dispatch/'s job",
      "src/reconcile/api.ts imports express: Express is known only in http/ (the emulator is a program of its own)",
      "src/tenant/client.ts imports ioredis: tenant/ talks to the tenant and knows nothing of Redis",
    ]);
  });

  it("when a part other than app.ts or the event view imports upgrade/, then it is a violation naming the rule", async () => {
    const root = await tree({
      "sweep/state.ts": 'import { adopt } from "../upgrade/adopt.js";\nexport type SweepState = 1;\n',
      "upgrade/adopt.ts": "export const adopt = 1;\n",
      "app.ts": 'import { adopt } from "./upgrade/adopt.js";\n',
    });
    // That metrics/ imports nothing above it is an arrow of docs/architecture.md (metrics -> -), checked with the others.
    expect(checkBoundaries(root).sort()).toEqual([
      "src/sweep/state.ts imports upgrade/adopt.ts: upgrade/ (an earlier release's key layout) is deleted as a unit: only app.ts and the event view's job lookup use it",
    ]);
  });

  it("when two modules import each other through a third, then the cycle is reported once", async () => {
    const root = await tree({
      "a/one.ts": 'export { two } from "../b/two.js";\n',
      "b/two.ts": 'import { three } from "./three.js";\nexport const two = three;\n',
      "b/three.ts": 'import type { two } from "../a/one.js";\nexport const three = 3;\n',
    });
    expect(checkBoundaries(root)).toEqual(["import cycle: src/a/one.ts -> src/b/two.ts -> src/b/three.ts -> src/a/one.ts"]);
  });

  it("when imports span lines or are type-only, then each is read", () => {
    const source = 'import {\n  a,\n  b,\n} from "./x.js";\nimport type { C } from "bullmq";\nexport * from "../y.js";\n';
    expect(importsOf(source, "queue/z.ts")).toEqual(["queue/x.ts", "bullmq", "y.ts"]);
  });
});

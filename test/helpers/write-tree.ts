import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Cleanup } from "./cleanup.js";

/** A directory of files (`path → text`) under the system's temp directory, removed by `cleanup`. */
export async function writeTree(files: Record<string, string>, cleanup: Cleanup): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "sk-tree-"));
  cleanup.push(() => rm(root, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

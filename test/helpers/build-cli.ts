import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");

/**
 * Compiles src/ the way the Dockerfile does (tsconfig.build.json) into a private directory
 * under test-artifacts/, so a concurrent `npm run build` cannot swap files under the test.
 * Type errors in files being edited elsewhere do not stop the emit; a missing CLI does.
 * Returns the directory that holds `dist/`.
 */
export async function buildCli(name: string): Promise<string> {
  const outDir = join(root, "test-artifacts", `${name}-${process.pid}`);
  const tsc = join(root, "node_modules/typescript/bin/tsc");
  const output = await execFileAsync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", join(outDir, "dist")], { cwd: root }).catch(
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
  if (!existsSync(join(outDir, "dist/cli/main.js"))) throw new Error(`the build failed: ${String(output)}`);
  // The archive's migrations and the Lua scripts are read beside their compiled modules.
  await execFileAsync(process.execPath, [join(root, "scripts/copy-assets.mjs"), join(outDir, "dist")], { cwd: root });
  return outDir;
}

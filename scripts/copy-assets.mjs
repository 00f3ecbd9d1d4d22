// `npm run build` runs this after tsc: files other than TypeScript that modules read at run
// time beside themselves (the archive's migrations, src/archive/sql/*.sql, and the Lua
// scripts, src/**/*.lua) are copied to the same place under dist/.
//
//   node scripts/copy-assets.mjs [dist-dir]     (default: dist)
import { cpSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";

const assets = [".sql", ".lua"];
const root = join(import.meta.dirname, "..");
const source = join(root, "src");
const target = process.argv[2] ?? join(root, "dist");

/** Every asset under `dir`, as a path relative to src/. */
function assetsUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return assetsUnder(path);
    return assets.some((ending) => entry.name.endsWith(ending)) ? [relative(source, path)] : [];
  });
}

for (const file of assetsUnder(source)) cpSync(join(source, file), join(target, file), { recursive: true, force: true });

// `npm start` runs this first: it compiles src/ to dist/ only when a source (or the
// compiler settings) changed since the last build, so a start with dist/ current does not
// wait for tsc. A cold start (no dist/) builds as `npm run build` does.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import process from "node:process";

// tsc rewrites every output on each build, so this one's time is the last build's.
const built = "dist/cli/main.js";
const inputs = ["src", "tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json"].filter((path) => existsSync(path));

/** The newest modification time of a file, or of any file under a directory. */
function newest(path) {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

if (existsSync(built) && statSync(built).mtimeMs >= Math.max(...inputs.map(newest))) {
  process.stdout.write("dist/ is current: not compiling\n");
} else {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
    execFileSync(process.execPath, ["scripts/copy-assets.mjs"], { stdio: "inherit" });
  } catch {
    process.exit(1); // tsc printed the errors
  }
}

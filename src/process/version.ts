import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package's version, from the nearest package.json above this file: the one above
 * src/ and dist/ (also in the image), further up for a build elsewhere (test-artifacts/).
 */
export const version: string = findVersion(dirname(fileURLToPath(import.meta.url)));

function findVersion(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    const file = join(at, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "streamkeeper" && pkg.version) return pkg.version;
    }
    if (dirname(at) === at) return "unknown";
  }
}

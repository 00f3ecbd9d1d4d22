import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

export interface Tool {
  name: string;
  /** Where `command -v <name>` finds it (as .ci/run looks), or undefined. */
  path: string | undefined;
  /** Skip the tests that need it: it is missing and this is not CI. Under CI (CI=true) they run, and fail. */
  skip: boolean;
}

/**
 * A program the tests run (chromium, promtool), found on PATH the way `.ci/run` installs
 * and checks it (`command -v`). Missing on a developer's machine: the tests that need it
 * skip with a warning naming the package. Missing under CI: they do not skip; `pathOf`
 * fails them with the same words, so a CI run never passes with them silently left out.
 */
export function findTool(name: string, install: string): Tool {
  const path = (process.env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find((candidate) => {
      try {
        accessSync(candidate, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const skip = path === undefined && process.env.CI !== "true";
  if (skip) console.warn(`tests that need ${name} are skipped: it is not on PATH (${install}; CI installs it, and there they fail instead)`);
  return { name, path, skip };
}

/** The tool's path, or an error naming what to install (under CI, where a missing tool fails its tests). */
export function pathOf(tool: Tool): string {
  if (tool.path === undefined) throw new Error(`${tool.name} is not on PATH, and CI=true: its tests fail rather than skip; install it (.ci/run does: apt-get install ${tool.name === "promtool" ? "prometheus" : tool.name})`);
  return tool.path;
}

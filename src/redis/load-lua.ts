import { readFileSync } from "node:fs";

const includeLine = /^--- @include "([^"]+)"[ \t]*$/gm;

/**
 * A Lua script kept as a `.lua` file beside the module that runs it, with its keys,
 * arguments and reply written at its top (as BullMQ keeps its commands), read once when
 * that module loads: `loadLua(new URL("./lease-acquire.lua", import.meta.url))`. A line
 * `--- @include "lease.lua"` stands for that file's text (a path relative to the script;
 * each file once), so functions several scripts share are written once. `npm run build`
 * copies the files to dist/ (scripts/copy-assets.mjs).
 */
export function loadLua(url: URL): string {
  return withIncludes(url, new Set());
}

function withIncludes(url: URL, included: Set<string>): string {
  included.add(url.href);
  return readFileSync(url, "utf8").replace(includeLine, (_line, path: string) => {
    const target = new URL(path, url);
    return included.has(target.href) ? "" : withIncludes(target, included);
  });
}

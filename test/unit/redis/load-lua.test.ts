import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { loadLua } from "../../../src/redis/load-lua.js";

const root = join(import.meta.dirname, "../../..");
const made: string[] = [];

afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sk-lua-"));
  made.push(dir);
  return dir;
}

async function luaFiles(dir = join(root, "src")): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith(".lua")).map((entry) => relative(join(root, "src"), join(entry.parentPath, entry.name))).sort();
}

describe("loadLua", () => {
  it("when a script includes files, then each include line stands for its file once, relative to the script", async () => {
    const dir = await scratch();
    await writeFile(join(dir, "shared.lua"), "local function shared() return 1 end\n");
    await writeFile(join(dir, "other.lua"), '--- @include "shared.lua"\nlocal function other() return shared() end\n');
    await writeFile(join(dir, "main.lua"), '--[[ header ]]\n--- @include "other.lua"\n--- @include "shared.lua"\nreturn other()\n');
    expect(loadLua(pathToFileURL(join(dir, "main.lua")))).toBe(
      "--[[ header ]]\nlocal function shared() return 1 end\n\nlocal function other() return shared() end\n\n\nreturn other()\n",
    );
  });

  it("when the project's scripts are read, then each states at its top what it takes and answers, or what it defines for the scripts including it", async () => {
    const files = await luaFiles();
    expect(files.length).toBeGreaterThanOrEqual(20);
    for (const file of files) {
      const text = await readFile(join(root, "src", file), "utf8");
      expect(text.startsWith("--[["), `${file} opens with its header`).toBe(true);
      const header = text.slice(0, text.indexOf("]]"));
      // Whether it runs on its own: a top-level return once its includes are in place.
      const loaded = loadLua(pathToFileURL(join(root, "src", file)));
      const runs = /\breturn\b/.test(loaded.slice(loaded.indexOf("]]")).replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/local function[\s\S]*?\nend\n/g, ""));
      if (runs) expect(header, `${file} names its keys or arguments and its reply`).toMatch(/Input:[\s\S]*Output:/);
      else expect(header, `${file} says who includes it`).toMatch(/[Ii]ncluded by/);
    }
  });

  it("when the build's asset copy runs, then every Lua script and migration is in dist/ at its place", async () => {
    const dist = await scratch();
    await promisify(execFile)(process.execPath, [join(root, "scripts/copy-assets.mjs"), dist], { cwd: root });
    const copied = await readdir(dist, { recursive: true, withFileTypes: true });
    const names = copied.filter((entry) => entry.isFile()).map((entry) => relative(dist, join(entry.parentPath, entry.name))).sort();
    const sql = (await readdir(join(root, "src/archive/sql"))).map((name) => join("archive/sql", name));
    expect(names).toEqual([...(await luaFiles()), ...sql].sort());
  });
});

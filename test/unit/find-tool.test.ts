import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { findTool, pathOf } from "../helpers/find-tool.js";

/** The lookup the browser and promtool tests share: found as `command -v` finds it, and never a silent skip under CI. */
describe("findTool", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sk-tool-"));
    await writeFile(join(dir, "sk-present"), "#!/bin/sh\n");
    await chmod(join(dir, "sk-present"), 0o755);
    await writeFile(join(dir, "sk-not-executable"), "");
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await rm(dir, { recursive: true, force: true });
  });

  it("when the program is an executable on PATH, then its path is found and nothing skips", () => {
    vi.stubEnv("PATH", `/nonexistent-dir:${dir}`);
    vi.stubEnv("CI", "");
    expect(findTool("sk-present", "install it")).toEqual({ name: "sk-present", path: join(dir, "sk-present"), skip: false });
  });

  it("when the program is missing (or not executable) outside CI, then its tests skip", () => {
    vi.stubEnv("PATH", dir);
    vi.stubEnv("CI", "");
    expect(findTool("sk-missing", "install it")).toMatchObject({ path: undefined, skip: true });
    expect(findTool("sk-not-executable", "install it")).toMatchObject({ path: undefined, skip: true });
  });

  it("when the program is missing under CI=true, then its tests do not skip and asking for its path fails naming what to install", () => {
    vi.stubEnv("PATH", dir);
    vi.stubEnv("CI", "true");
    const tool = findTool("promtool", "install it");
    expect(tool.skip).toBe(false);
    expect(() => pathOf(tool)).toThrow("promtool is not on PATH, and CI=true: its tests fail rather than skip; install it (.ci/run does: apt-get install prometheus)");
  });
});

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, readFile, rm, stat, symlink, utimes } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");

describe("package.json", () => {
  it("when it names a main module, then that module is built from src/", async () => {
    const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { main?: string; bin: Record<string, string> };
    const fromSrc = (built: string) => join(root, built.replace(/^dist\//, "src/").replace(/\.js$/, ".ts"));
    for (const entry of [pkg.main, ...Object.values(pkg.bin)].filter((entry) => entry !== undefined)) {
      expect(existsSync(fromSrc(entry)), `${entry} has no source in src/`).toBe(true);
    }
  });
});

describe("npm start's build step", () => {
  // A private copy, so the builds here never swap dist/ under tests that run it.
  const dir = join(root, "test-artifacts", `npm-start-${process.pid}`);
  const built = join(dir, "dist/cli/main.js");
  const prestart = () => run("npm", ["run", "--silent", "prestart"], { cwd: dir });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("when dist/ is current, then it does not compile again; when a source is newer, it compiles", { timeout: 240_000 }, async () => {
    await mkdir(dir, { recursive: true });
    for (const path of ["src", "scripts", "package.json", "tsconfig.json", "tsconfig.build.json"]) await cp(join(root, path), join(dir, path), { recursive: true });
    await symlink(join(root, "node_modules"), join(dir, "node_modules"));

    if (existsSync(join(root, "dist/cli/main.js"))) {
      // `npm test` built dist/ already: start from a copy of that build, newer than every source.
      await cp(join(root, "dist"), join(dir, "dist"), { recursive: true });
      await utimes(built, new Date(), new Date());
    } else {
      await prestart(); // cold: builds as `npm run build` does
    }
    expect(existsSync(built)).toBe(true);
    const before = (await stat(built)).mtimeMs;

    await prestart();
    expect((await stat(built)).mtimeMs, "dist/ was compiled again although it was current").toBe(before);

    const later = new Date(before + 5000);
    await utimes(join(dir, "src/app.ts"), later, later); // an edit after the build
    await prestart();
    expect((await stat(built)).mtimeMs).toBeGreaterThan(before);
  });
});

import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort } from "../../src/redis/redis-server.js";
import { buildCli } from "../helpers/build-cli.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { useCleanup } from "../helpers/cleanup.js";
import { basicAuthorization } from "../helpers/credentials.js";

const root = resolve(import.meta.dirname, "../..");
const adminToken = "built-operator-view-token";

/**
 * The page is found by the built service as `npm start` and the npm package run it: the
 * files in web/admin/ beside dist/ (package.json "files" ships both), not in src/.
 */
describe("operator view from the built service", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when dist/cli/main.js starts the service, then /admin/ serves the page and its script from web/admin/", { timeout: 300_000 }, async () => {
    const dir = await buildCli("operator-view");
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await cp(join(root, "web"), join(dir, "web"), { recursive: true });
    const dataDir = await mkdtemp(join(tmpdir(), "sk-built-view-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const adminPort = await freePort();
    const child: ChildProcess = spawn(process.execPath, [join(dir, "dist/cli/main.js"), "start"], {
      cwd: dataDir,
      env: { ...process.env, ...serviceProcessEnv({ PORT: "0", HOST: "127.0.0.1", ADMIN_PORT: String(adminPort), ADMIN_HOST: "127.0.0.1", DATA_DIR: dataDir, ADMIN_TOKEN: adminToken }) },
      stdio: "ignore",
    });
    cleanup.push(async () => {
      child.kill("SIGTERM");
      await new Promise((done) => (child.exitCode !== null ? done(undefined) : child.once("exit", done)));
    });
    const basic = { authorization: basicAuthorization("operator", adminToken) };
    const url = `http://127.0.0.1:${adminPort}/admin/`;
    await expect.poll(async () => (await fetch(url, { headers: basic }).catch(() => undefined))?.status, { timeout: 60_000, interval: 200 }).toBe(200);
    expect(await (await fetch(url, { headers: basic })).text()).toContain("Streamkeeper operator view");
    const script = await fetch(`${url}operator-view.js`, { headers: basic });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/javascript/);
  });
});

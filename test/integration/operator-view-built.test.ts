import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { buildCli } from "../helpers/build-cli.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { useCleanup } from "../helpers/cleanup.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
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
    const service = await startServiceProcess("all", serviceProcessEnv({ DATA_DIR: dataDir, ADMIN_TOKEN: adminToken }), {
      entry: [join(dir, "dist/cli/main.js")],
      cwd: dataDir,
      inheritEnvironment: true,
    });
    cleanup.push(() => service.stop());
    const basic = { authorization: basicAuthorization("operator", adminToken) };
    const url = `${service.adminUrl}/admin/`;
    const page = await fetch(url, { headers: basic });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Streamkeeper operator view");
    const script = await fetch(`${url}operator-view.js`, { headers: basic });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/javascript/);
  });
});

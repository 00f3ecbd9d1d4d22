import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basicAuthorization } from "../helpers/credentials.js";
import { refusedUrl } from "../helpers/explicit-ports.js";
import { buildCli } from "../helpers/build-cli.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";

const root = resolve(import.meta.dirname, "../..");

/**
 * The README's quick start, as a new user runs it: `npm start` in a fresh folder (an
 * embedded Redis from PATH, an embedded Postgres, generated webhook credentials and admin
 * token under ./.streamkeeper), the README's event sent with the generated credentials,
 * then the commands with nothing more set than where the service listens.
 */
describe("the README's quick start", () => {
  let dir: string;
  let service: ServiceProcess;
  let readme: string;
  let built: string;
  let cli: string;

  beforeAll(async () => {
    readme = await readFile(join(import.meta.dirname, "../../README.md"), "utf8");
    dir = await mkdtemp(join(tmpdir(), "sk-quick-start-"));
    // The package as `npm start` runs it: dist/ with the operator view's files (web/) beside it.
    built = await buildCli("quick-start");
    await cp(join(root, "web"), join(built, "web"), { recursive: true });
    cli = join(built, "dist/cli/main.js");
    // The README's settings: DOWNSTREAM_URL alone (here where nothing listens, as in the README);
    // ports free ones rather than 8080 and 9090, which another service on the machine may hold.
    service = await startServiceProcess("all", { DOWNSTREAM_URL: `${refusedUrl}/`, ADMIN_TOKEN: "", ARCHIVE: "on", LOG_LEVEL: "info" }, { cwd: dir, entry: [cli] });
  });
  afterAll(async () => {
    await service?.stop(60_000);
    await rm(dir, { recursive: true, force: true });
    await rm(built, { recursive: true, force: true });
  });

  /** A command run in the quick start's folder, its shell setting only the admin port (the README's default, 9090, moved). */
  const command = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((ok) => {
      const env = { PATH: process.env.PATH ?? "", ADMIN_PORT: new URL(service.adminUrl).port };
      execFile(process.execPath, [cli, ...args], { cwd: dir, env, timeout: 60_000 }, (error, stdout, stderr) => ok({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }));
    });

  it("when the README's event is sent, then it is stored, and events search, dead-letters list and routes list work with no ADMIN_TOKEN set", async () => {
    const quickStart = readme.slice(readme.indexOf("## Quick start"), readme.indexOf("### What the start does"));
    const sent = /-u "streamkeeper:\$PASSWORD" -H 'Content-Type: application\/json' \\\n\s+http:\/\/127\.0\.0\.1:8080(\/webhooks\/\w+) -d '([^']+)'/.exec(quickStart);
    expect(sent, "the quick start's curl").not.toBeNull();
    const [, path, body] = sent!;
    const event = JSON.parse(body!) as { id: string };
    const { password } = JSON.parse(await readFile(join(dir, ".streamkeeper/webhook-credentials.json"), "utf8")) as { password: string };
    const answer = await fetch(`${service.publicUrl}${path}`, { method: "POST", headers: { authorization: basicAuthorization("streamkeeper", password), "content-type": "application/json" }, body });
    expect({ status: answer.status, body: await answer.json() }).toEqual({ status: 202, body: { accepted: 1, duplicates: 0 } });

    // The start said where the operator view and its token are, never the token.
    const token = (await readFile(join(dir, ".streamkeeper/admin-token"), "utf8")).trim();
    expect(service.output()).toContain(`"msg":"operator view at ${service.adminUrl}/admin/: log in with any user name and the token in ${join(dir, ".streamkeeper/admin-token")} as the password"`);
    expect(service.output()).not.toContain(token);
    expect((await fetch(`${service.adminUrl}/admin/`, { headers: { authorization: basicAuthorization("ops", token) } })).status).toBe(200);

    expect(quickStart).toContain("streamkeeper events search --since 1h");
    // The archive takes the event a moment after the 202 (its outbox): polled.
    await expect.poll(async () => command(["events", "search", "--since", "1h"]), { timeout: 120_000, interval: 500 }).toMatchObject({ code: 0, stdout: expect.stringContaining(event.id) });
    for (const args of [["dead-letters", "list"], ["routes", "list"], ["events", "show", event.id]]) {
      const run = await command(args);
      expect({ code: run.code, stderr: run.stderr }, args.join(" ")).toEqual({ code: 0, stderr: "" });
    }
  });
});

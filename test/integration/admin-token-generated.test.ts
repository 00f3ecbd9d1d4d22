import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../chaos/run-cli.js";
import { capturedLogger, type CapturedLogger } from "../helpers/captured-logger.js";
import { basicAuthorization } from "../helpers/credentials.js";
import { userEvent } from "../helpers/fixtures.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { builtCli } from "../helpers/start-service-process.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { until } from "../helpers/until.js";

/**
 * ADMIN_TOKEN unset: the service generates one into DATA_DIR/admin-token, the operator view's
 * login and every command on the same DATA_DIR use it with nothing set; a token set in the
 * environment always wins, on both sides.
 */
describe("the generated admin token", () => {
  let dataDir: string;
  let elsewhere: string;
  let generated: TestService;
  let log: CapturedLogger;
  let token: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-admin-token-"));
    elsewhere = await mkdtemp(join(tmpdir(), "sk-admin-token-elsewhere-"));
    log = capturedLogger("info");
    generated = await startTestService({ ADMIN_TOKEN: "", DATA_DIR: dataDir, LOG_LEVEL: "info" }, "all", log.logger);
    token = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
  });
  afterAll(async () => {
    await generated?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(elsewhere, { recursive: true, force: true });
  });

  it("when the service starts with no ADMIN_TOKEN, then it logs at info where the operator view is and the token file, never the token", () => {
    const file = join(dataDir, "admin-token");
    expect(log.lines).toContainEqual(
      expect.objectContaining({ level: 30, url: `${generated.adminUrl}/admin/`, tokenFile: file, msg: `operator view at ${generated.adminUrl}/admin/: log in with any user name and the token in ${file} as the password` }),
    );
    expect(JSON.stringify(log.lines)).not.toContain(token);
  });

  it("when the dashboard or the admin API is asked, then the generated token logs in, and nothing else does", async () => {
    for (const path of ["/admin/", "/admin/queues", "/admin/routes"]) {
      expect((await fetch(`${generated.adminUrl}${path}`, { headers: { authorization: basicAuthorization("ops", token) } })).status, path).toBe(200);
      expect((await fetch(`${generated.adminUrl}${path}`, { headers: { authorization: `Bearer ${token}` } })).status, path).toBe(200);
      expect((await fetch(`${generated.adminUrl}${path}`)).status, path).toBe(401);
    }
  });

  it("when commands run with the service's DATA_DIR and no ADMIN_TOKEN, then they work with nothing more set", async () => {
    for (const args of [["routes", "list"], ["dead-letters", "list"], ["pull", "status"]]) {
      const run = await runCli(args, { ADMIN_URL: generated.adminUrl, DATA_DIR: dataDir });
      expect({ code: run.code, stderr: run.stderr }, args.join(" ")).toEqual({ code: 0, stderr: "" });
    }
  });

  it("when the archive is off, then events show reads what the service remembers: the arrival and each route's delivery state", async () => {
    const event = userEvent({ type: "user.created" });
    expect((await generated.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    const run = await runCli(["events", "show", event.id], { ADMIN_URL: generated.adminUrl, DATA_DIR: dataDir });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines.slice(0, 2)).toEqual([`event ${event.id}  user.created`, expect.stringMatching(/^arrived \S+Z by webhook \(stream est_38ANnv8pQhqsZrX2VFbftv\)$/)]);
    expect(lines[2]).toMatch(/^route default: \w+ \(\d+ attempt\(s\)/);
  });

  it("when a command's shell sets ADMIN_TOKEN, then it wins over the DATA_DIR's file: a wrong one is refused in one line saying what to check", async () => {
    const run = await runCli(["routes", "list"], { ADMIN_URL: generated.adminUrl, DATA_DIR: dataDir, ADMIN_TOKEN: "not-the-token" });
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: "" });
    expect(run.stderr).toBe(
      `error: the service at ${generated.adminUrl} refused this shell's ADMIN_TOKEN: set ADMIN_TOKEN to the service's admin token, or unset it to use the one the service generated (DATA_DIR/admin-token) with its DATA_DIR\n`,
    );
    expect((await runCli(["routes", "list"], { ADMIN_URL: generated.adminUrl, DATA_DIR: elsewhere, ADMIN_TOKEN: token })).code).toBe(0);
  });

  it("when a command has neither ADMIN_TOKEN nor a token file, then one line says the service must start once on this DATA_DIR, and the command creates no file", async () => {
    const run = await runCli(["routes", "list"], { ADMIN_URL: generated.adminUrl, DATA_DIR: elsewhere });
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: "" });
    expect(run.stderr).toBe(`error: no admin token here: the admin API needs the service started once on this DATA_DIR (it writes ${join(elsewhere, "admin-token")}), or ADMIN_TOKEN set to the service's\n`);
    await expect(readFile(join(elsewhere, "admin-token"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("when a command's token file is empty, then exit 2 naming the file", async () => {
    const damaged = join(elsewhere, "damaged");
    await mkdir(damaged);
    await writeFile(join(damaged, "admin-token"), "");
    const run = await runCli(["routes", "list"], { ADMIN_URL: generated.adminUrl, DATA_DIR: damaged });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^error: bad configuration: ${join(damaged, "admin-token")} is empty: delete it, and the next start generates a new one`));
  });

  it("when the service has ADMIN_TOKEN set and a token file in its DATA_DIR, then the environment's token wins (and ADMIN_PREVIOUS_TOKEN still works)", async () => {
    const withEnv = await startTestService({ ADMIN_TOKEN: "token-from-the-environment", ADMIN_PREVIOUS_TOKEN: "the-old-token", DATA_DIR: dataDir });
    try {
      const ask = (bearer: string) => fetch(`${withEnv.adminUrl}/admin/routes`, { headers: { authorization: `Bearer ${bearer}` } }).then((answer) => answer.status);
      expect(await ask("token-from-the-environment")).toBe(200);
      expect(await ask("the-old-token")).toBe(200);
      expect(await ask(token)).toBe(401);
      // A command on that DATA_DIR with no token sends the file's: refused, named by where it came from.
      const run = await runCli(["routes", "list"], { ADMIN_URL: withEnv.adminUrl, DATA_DIR: dataDir });
      expect({ code: run.code, stderr: run.stderr }).toEqual({
        code: 2,
        stderr: `error: the service at ${withEnv.adminUrl} refused the admin token in ${join(dataDir, "admin-token")}: run the command with the service's DATA_DIR, or set ADMIN_TOKEN to the service's admin token\n`,
      });
      expect((await runCli(["routes", "list"], { ADMIN_URL: withEnv.adminUrl, DATA_DIR: dataDir, ADMIN_TOKEN: "token-from-the-environment" })).code).toBe(0);
      expect((await readFile(join(dataDir, "admin-token"), "utf8")).trim()).toBe(token);
    } finally {
      await withEnv.close();
    }
  });

  it("when the service's token file is empty, then the start stops with exit 2 naming it", async () => {
    const damaged = join(elsewhere, "start");
    await mkdir(damaged);
    await writeFile(join(damaged, "admin-token"), "");
    const run = await runCli(["start"], serviceProcessEnv({ DATA_DIR: damaged }));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^error: bad configuration: ${join(damaged, "admin-token")} is empty: delete it, and the next start generates a new one \\(use it wherever the old one was kept\\), or set ADMIN_TOKEN\\n$`));
  });

  it("when the service's stdout is a terminal and LOG_FORMAT is unset, then its log lines are readable, with local time", async () => {
    const env = { PATH: process.env.PATH ?? "", ...serviceProcessEnv({ DATA_DIR: join(elsewhere, "terminal"), LOG_LEVEL: "info", PORT: "0", ADMIN_PORT: "0" }) };
    // script(1) gives the service a pseudo-terminal; its end (SIGHUP) stops the service cleanly.
    const child = spawn("script", ["-qfec", `exec ${process.execPath} ${builtCli()} start`, "/dev/null"], { env, stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const closed = new Promise((ok) => child.on("close", ok));
    try {
      await until("the service logs where the operator view is", () => output.includes("operator view at"), { withinMs: 120_000 });
    } finally {
      child.kill("SIGTERM");
      await closed;
    }
    const line = output.split(/\r?\n/).find((candidate) => candidate.includes("operator view at"));
    // eslint-disable-next-line no-control-regex -- colours, on a terminal
    expect(line?.replace(/\x1b\[[0-9;]*m/g, "")).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: operator view at http:\/\/127\.0\.0\.1:\d+\/admin\/: log in with any user name and the token in \S+admin-token as the password/);
  });
});

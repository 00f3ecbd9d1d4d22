import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCli } from "../chaos/run-cli.js";
import { cliEntry } from "../helpers/start-service-process.js";
import { startTestService } from "../helpers/start-test-service.js";

const version = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

describe("the command line", () => {
  it("when asked --version, then it prints the package version on stdout, exit 0", async () => {
    const run = await runCli(["--version"], {});
    expect(run).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("when run without a command or a subcommand, then the help goes to stdout, exit 2 (bad usage); asked for, exit 0", async () => {
    for (const [args, code] of [[[], 2], [["streams"], 2], [["--help"], 0], [["help"], 0], [["help", "start"], 0]] as const) {
      const run = await runCli([...args], {});
      expect(run.stderr, args.join(" ")).toBe("");
      expect(run.stdout).toMatch(/^Usage: streamkeeper/);
      expect(run.code, args.join(" ")).toBe(code);
    }
  });

  it("when its reader closes the pipe before the output is written (| head, | true), then the command ends quietly, exit 0, no stack trace", async () => {
    const child = spawn(process.execPath, [...cliEntry(), "settings"], { env: { PATH: process.env.PATH ?? "" }, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "close")) as [number | null];
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  });

  it("when a command's help is asked, then it lists the settings it reads, what it prints and its exit codes", async () => {
    const run = await runCli(["dead-letters", "replay", "--help"], {});
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("\nSettings read: ADMIN_URL (else ADMIN_HOST/ADMIN_PORT), ADMIN_TOKEN (else the one the service generated in DATA_DIR/admin-token): the running service's admin API, never Redis\n");
    expect(run.stdout).toContain("\nPrints: replayed <route>/<job-id>, one line each\n");
    expect(run.stdout).toContain("\nExit codes: 0 replayed; 1 an id is no dead letter (nothing replayed); 1 no service answers (one line says so) or it failed; 2 bad usage or settings (ADMIN_TOKEN refused)\n");
  });

  it("when the help of reconcile or streams list is asked, then it tells the --since mode, both rate settings, and the SWEPT column with its JSON fields", async () => {
    const reconcile = await runCli(["reconcile", "--help"], {});
    expect(reconcile.code).toBe(0);
    for (const part of ["RECONCILE_RATE_SHARE", "RECONCILE_RATE_PER_SECOND", "With --since: the running service reads the window", "ADMIN_TOKEN", "would_recover|already_received|no_payload"]) expect(reconcile.stdout).toContain(part);
    const streams = await runCli(["streams", "list", "--help"], {});
    expect(streams.code).toBe(0);
    for (const part of ["swept (yes, or no and the setting behind it)", "swept: true|false", "whyNotSwept: not_named|points_elsewhere|no_tenant|no_sweep|sweep_off"]) expect(streams.stdout).toContain(part);
  });

  it("when start gets a PORT that is no port, then exit 2 with one line in our words", async () => {
    const run = await runCli(["start"], { PORT: "eighty" });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('error: bad configuration: PORT: use a whole number from 0 to 65535 (got "eighty")\n');
    expect(run.stdout).toBe("");
  });

  it("when a usage error happens, then stderr is one error: line", async () => {
    const run = await runCli(["nope"], {});
    expect(run.code).toBe(2);
    expect(run.stderr).toBe("error: unknown command 'nope' (run with --help for usage)\n");
  });

  it("when reconcile --no-wait queues ids, then stdout has only the job ids and stderr says they wait and how to follow them, also with --verbose", async () => {
    // A receiver: the admin API answers, and no worker consumes the reconcile queue.
    const service = await startTestService({ ADMIN_TOKEN: "polish-admin-token" }, "receiver");
    try {
      const env = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: "polish-admin-token", LOG_LEVEL: "debug" };
      const hint =
        /^note: no worker consumes the reconcile queue of the service \(role receiver, pid \d+ on .*\) now; the jobs wait until a worker role runs\n/.source +
        `follow each job with: curl -H "Authorization: Bearer \\$ADMIN_TOKEN" ${service.adminUrl}/admin/reconcile/<job-id>\n$`;
      const run = await runCli(["reconcile", "evt_polish000000000000000a", "--no-wait"], env);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^evt_polish000000000000000a queued \S+\n$/);
      expect(run.stderr).toMatch(new RegExp(hint));
      const verbose = await runCli(["reconcile", "evt_polish000000000000000b", "--no-wait", "--verbose"], env);
      expect(verbose.code).toBe(0);
      expect(verbose.stdout).toMatch(/^evt_polish000000000000000b queued \S+\n$/);
      // As JSON, each line carries the contract's outcome field: queued.
      const json = await runCli(["reconcile", "evt_polish000000000000000c", "--no-wait", "--json"], env);
      expect(JSON.parse(json.stdout)).toMatchObject({ eventId: "evt_polish000000000000000c", streamId: null, outcome: "queued" });

      // The service's settings are its own: values in the command's shell it would refuse do
      // not stop a command that only talks to it. Its own settings still must be right.
      const strayShell = { ...env, DEDUPE_TTL_SECONDS: "soon", PULL: "maybe", REDIS_URL: "not a url" };
      const stray = await runCli(["reconcile", "evt_polish000000000000000d", "--no-wait"], strayShell);
      expect(stray.stderr).not.toMatch(/DEDUPE_TTL_SECONDS|PULL|REDIS_URL/);
      expect({ code: stray.code, stdout: stray.stdout }).toEqual({ code: 0, stdout: expect.stringMatching(/^evt_polish000000000000000d queued \S+\n$/) });
      expect((await runCli(["routes", "list"], strayShell)).code).toBe(0);
      const badPort = await runCli(["routes", "list"], { ...strayShell, ADMIN_URL: "", ADMIN_PORT: "lots" });
      expect({ code: badPort.code, stderr: badPort.stderr }).toEqual({ code: 2, stderr: 'error: bad configuration: ADMIN_PORT: use a whole number from 0 to 65535 (got "lots")\n' });
    } finally {
      await service.close();
    }
  });
});

import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { control } from "./emulator-test-kit.js";
import { refusedUrl } from "../helpers/explicit-ports.js";
import { builtCli } from "../helpers/start-service-process.js";

/**
 * The built binary against the emulator. `npm test` builds dist/ first (pretest); when
 * run alone and dist/ is missing, the build happens here.
 */
const main = builtCli();

let emu: Emulator;
let dataDir: string;
/** The running service the commands ask (no sweep settings: SWEPT says what to set). */
let service: TestService;
const adminToken = "cli-streams-admin-token";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = {
    PATH: process.env.PATH ?? "",
    MGMT_API_BASE_URL: emu.apiBaseUrl,
    MGMT_TOKEN_URL: emu.tokenUrl,
    MGMT_CLIENT_ID: "emulator-client",
    MGMT_CLIENT_SECRET: "emulator-secret",
    DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    ADMIN_URL: service.adminUrl,
    ADMIN_TOKEN: adminToken,
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [main, ...args], { env: { ...base, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

interface StoredStream {
  id: string;
  name: string;
  status: string;
  destination: { configuration: { webhook_endpoint: string; webhook_authorization: Record<string, string> } };
}

const streamIds: string[] = [];

beforeAll(async () => {
  emu = await startEmulator({ timeScale: 0.01 });
  dataDir = await mkdtemp(join(tmpdir(), "sk-cli-streams-"));
  service = await startTestService({ ADMIN_TOKEN: adminToken });
  for (const name of ["alpha", "beta", "gamma"]) {
    const stream = await control<{ id: string }>(emu, "/streams", {
      name,
      subscriptions: [{ event_type: "user.created" }, { event_type: "user.updated" }],
      destination: { type: "webhook", configuration: { webhook_endpoint: `https://hooks.example.com/${name}`, webhook_authorization: { method: "bearer", token: "old-token" } } },
    });
    streamIds.push(stream.id);
  }
});

afterAll(async () => {
  await service?.close();
  await emu?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("streamkeeper streams", () => {
  it("when streams are listed, then a table shows id, name, status, whether swept, subscriptions and endpoint", async () => {
    const run = await cli(["streams", "list"]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+NAME\s+STATUS\s+SWEPT\s+SUBSCRIPTIONS\s+ENDPOINT$/);
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(
      new RegExp(`^${streamIds[0]}\\s+alpha\\s+enabled\\s+no \\(set RECONCILE_SWEEP_STREAMS or PUBLIC_URL\\)\\s+user\\.created,user\\.updated\\s+https://hooks\\.example\\.com/alpha$`),
    );
  });

  it("when the running service has sweep settings, then SWEPT follows them, not this shell's, in the table and in --json", async () => {
    await control(emu, "/streams", {
      name: "delta",
      subscriptions: [{ event_type: "user.created" }],
      destination: { type: "webhook", configuration: { webhook_endpoint: "https://hooks.example.com.evil.example/delta", webhook_authorization: { method: "bearer", token: "t" } } },
    });
    // A running service with these settings answers; the CLI follows what it says.
    // The service's tenant settings (only whether they are there counts).
    const serviceTenant = { MGMT_API_BASE_URL: "http://127.0.0.1:9/api/v2", MGMT_TOKEN_URL: "http://127.0.0.1:9/oauth/token", MGMT_CLIENT_ID: "id", MGMT_CLIENT_SECRET: "secret" };
    const listedBy = async (env: Record<string, string>, args: string[], tenant: Record<string, string> = serviceTenant) => {
      const running = await startTestService({ ADMIN_TOKEN: adminToken, STREAM_WATCH_INTERVAL_SECONDS: "0", ...tenant, ...env });
      try {
        // This shell's own settings disagree: they must not count.
        return await cli(args, { ADMIN_URL: running.adminUrl, PUBLIC_URL: "https://elsewhere.example.com" });
      } finally {
        await running.close();
      }
    };
    const run = await listedBy({ PUBLIC_URL: "https://hooks.example.com", RECONCILE_SWEEP_STREAMS: `${streamIds[0]},${streamIds[1]}`, RECONCILE_SWEEP_INTERVAL_SECONDS: "3600" }, ["streams", "list"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    const swept = Object.fromEntries(
      run.stdout
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((line) => [line.split(/\s+/)[1], line.match(/\s(yes|no \([^)]*\))\s/)?.[1]]),
    );
    expect(swept).toEqual({ alpha: "yes", beta: "yes", gamma: "no (not in RECONCILE_SWEEP_STREAMS)", delta: "no (not in RECONCILE_SWEEP_STREAMS)" });

    const byUrl = await listedBy({ PUBLIC_URL: "https://hooks.example.com", RECONCILE_SWEEP_INTERVAL_SECONDS: "3600" }, ["streams", "list", "--json"]);
    const listed = JSON.parse(byUrl.stdout) as Array<{ name: string; swept: boolean; whyNotSwept?: string }>;
    expect(listed.map(({ name, swept, whyNotSwept }) => ({ name, swept, whyNotSwept }))).toEqual([
      { name: "alpha", swept: true, whyNotSwept: undefined },
      { name: "beta", swept: true, whyNotSwept: undefined },
      { name: "gamma", swept: true, whyNotSwept: undefined },
      { name: "delta", swept: false, whyNotSwept: "points_elsewhere" },
    ]);

    const off = await listedBy({ PUBLIC_URL: "https://hooks.example.com", RECONCILE_SWEEP_INTERVAL_SECONDS: "0" }, ["streams", "list", "--json"]);
    expect((JSON.parse(off.stdout) as Array<{ whyNotSwept?: string }>)[0]).toMatchObject({ swept: false, whyNotSwept: "sweep_off" });

    // A service without tenant settings sweeps nothing, whatever its scope.
    const noTenant = await listedBy({ PUBLIC_URL: "https://hooks.example.com" }, ["streams", "list", "--json"], {});
    expect((JSON.parse(noTenant.stdout) as Array<{ whyNotSwept?: string }>)[0]).toMatchObject({ swept: false, whyNotSwept: "no_tenant" });
  });

  it("when no service answers, then the tenant's streams are listed, SWEPT is unknown, one note says so, and the command exits 0", async () => {
    const nobody = refusedUrl;
    const run = await cli(["streams", "list", "--json"], { ADMIN_URL: nobody, PUBLIC_URL: "https://hooks.example.com" });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^note: no service answers at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\), so SWEPT is unknown: start it, or set ADMIN_URL to where it runs\n$/);
    const listed = JSON.parse(run.stdout) as Array<{ name: string; swept: boolean | null; whyNotSwept?: string }>;
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((stream) => stream.swept === null && stream.whyNotSwept === "no_service")).toBe(true);
    const table = await cli(["streams", "list"], { ADMIN_URL: nobody });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^est_\w+\s+alpha\s+\w+\s+unknown \(no service answers\)/m);
  });

  it("when the service answers but this command has no admin token, then the streams are listed, SWEPT is unknown, one note says why, and the command exits 0", async () => {
    const run = await cli(["streams", "list"], { ADMIN_TOKEN: "" });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(
      `note: SWEPT is unknown: no admin token here: the admin API needs the service started once on this DATA_DIR (it writes ${join(dataDir, "admin-token")}), or ADMIN_TOKEN set to the service's\n`,
    );
    expect(run.stdout).toMatch(/^est_\w+\s+alpha\s+\w+\s+unknown \(the service refused the admin token\)/m);
    const json = await cli(["streams", "list", "--json"], { ADMIN_TOKEN: "" });
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as Array<{ swept: unknown; whyNotSwept?: string }>).every((stream) => stream.swept === null && stream.whyNotSwept === "no_token")).toBe(true);
  });

  it("when --take is smaller than the list, then one page is shown and --all --json follows every page into one array", async () => {
    const page = await cli(["streams", "list", "--take", "2"]);
    expect(page.code).toBe(0);
    expect(page.stdout.trimEnd().split("\n")).toHaveLength(3);
    expect(page.stderr).toContain("--all");
    const all = await cli(["streams", "list", "--take", "2", "--all", "--json"]);
    expect(all.code).toBe(0);
    const streams = JSON.parse(all.stdout) as { id: string }[];
    expect(streams.map((stream) => stream.id)).toEqual(expect.arrayContaining(streamIds));
  });

  it("when --take is not 1 to 100, then exit 2 with one error line saying what to give", async () => {
    for (const take of ["abc", "0", "101"]) {
      const run = await cli(["streams", "list", "--take", take]);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`error: --take must be an integer from 1 to 100, got "${take}"\n`);
    }
  });

  it("when the client lacks the scope, then exit 1 with the scope to grant", async () => {
    await control(emu, "/clients", { client_id: "cli-no-scope", client_secret: "cli-no-scope-secret", scopes: [], global: true });
    const run = await cli(["streams", "list"], { MGMT_CLIENT_ID: "cli-no-scope", MGMT_CLIENT_SECRET: "cli-no-scope-secret" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: list_event_streams: insufficient scope: the client needs read:event_streams; grant it/);
    expect(run.stderr).not.toContain("cli-no-scope-secret");
    expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("when the client secret is wrong, then exit 1 naming the settings to check, without the secret", async () => {
    const run = await cli(["streams", "list"], { MGMT_CLIENT_SECRET: "wrong-secret-value" });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("check MGMT_CLIENT_ID and MGMT_CLIENT_SECRET");
    expect(run.stderr).not.toContain("wrong-secret-value");
  });

  it("when the tenant is not configured, then exit 2 naming what to set", async () => {
    const run = await cli(["streams", "list"], { MGMT_API_BASE_URL: "", MGMT_TOKEN_URL: "" });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: bad configuration: set TENANT_DOMAIN/);
  });

  it("when a stream is updated, then the tenant has the change and the output has no secret", async () => {
    const id = streamIds[1]!;
    const run = await cli(["streams", "update", id, "--name", "beta-2", "--status", "disabled", "--endpoint", "https://hooks.example.com/b2", "--auth", "bearer", "--token", "new-token-value"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`updated ${id}`);
    expect(run.stdout).not.toContain("new-token-value");
    const stored = await control<StoredStream>(emu, `/streams/${id}`);
    expect(stored).toMatchObject({ name: "beta-2", status: "disabled" });
    expect(stored.destination.configuration).toEqual({ webhook_endpoint: "https://hooks.example.com/b2", webhook_authorization: { method: "bearer", token: "new-token-value" } });
  });

  it("when an update flag is bad, then exit 2 naming the flag and nothing is sent", async () => {
    const id = streamIds[2]!;
    const cases: [string[], RegExp][] = [
      [["--status", "paused"], /^error: --status: use enabled or disabled\n$/],
      [["--subscribe", "user.created,user.exploded"], /^error: --subscribe: unknown event type "user.exploded"/],
      [["--endpoint", "http://hooks.example.com/w", "--auth", "bearer", "--token", "t"], /^error: --endpoint: give an https:\/\/ URL/],
      [["--endpoint", "https://hooks.example.com/w"], /^error: --endpoint needs --auth basic\|bearer/],
      [["--endpoint", "https://hooks.example.com/w", "--auth", "basic", "--username", "u"], /^error: --password is required with --auth basic\n$/],
      [[], /^error: nothing to update/],
    ];
    for (const [flags, message] of cases) {
      const run = await cli(["streams", "update", id, ...flags]);
      expect(run.code, flags.join(" ")).toBe(2);
      expect(run.stderr).toMatch(message);
    }
    expect((await control<StoredStream>(emu, `/streams/${id}`)).name).toBe("gamma");
  });

  it("when a stream id does not exist, then exit 1 with the tenant's message", async () => {
    const run = await cli(["streams", "update", "est_aD5AUDqZbHFcMoEx2LxAk9", "--name", "x"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("The requested stream does not exist.");
  });

  it("when a stream is connected, then it points at <public-url>/webhooks/<id> with the service's credentials, printed without the password", async () => {
    const id = streamIds[0]!;
    // No service answers there: the command acts with this shell's complete credentials.
    const env = { WEBHOOK_AUTH: "basic", WEBHOOK_USERNAME: "hooks", WEBHOOK_PASSWORD: "connect-password-1", ADMIN_URL: refusedUrl };
    const run = await cli(["streams", "connect", id, "--public-url", "https://sk.example.com/"], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`stream ${id} now delivers to https://sk.example.com/webhooks/${id} with basic authorization (user hooks)\n`);
    expect(run.stderr).toBe(
      `note: no service answers at ${refusedUrl} (set ADMIN_URL to where it runs): the stream got this shell's WEBHOOK_* credentials; if the service checks others, run this again where ADMIN_URL reaches it\n`,
    );
    const stored = await control<StoredStream>(emu, `/streams/${id}`);
    expect(stored.destination.configuration).toEqual({
      webhook_endpoint: `https://sk.example.com/webhooks/${id}`,
      webhook_authorization: { method: "basic", username: "hooks", password: "connect-password-1" },
    });
  });

  it("when the service has WEBHOOK_AUTH=none or a bad public URL, then connect exits 2", async () => {
    const nobody = refusedUrl;
    const none = await cli(["streams", "connect", streamIds[0]!, "--public-url", "https://sk.example.com"], { WEBHOOK_AUTH: "none", ADMIN_URL: nobody });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^error: WEBHOOK_AUTH=none, but the tenant requires authorization; set WEBHOOK_AUTH=basic/);
    const plain = await cli(["streams", "connect", streamIds[0]!, "--public-url", "http://sk.example.com"]);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/^error: --public-url must be an https:\/\/ URL/);
  });
});

describe("streamkeeper token-exchange-profiles delete", () => {
  it("when a profile is deleted, then exit 0 and it is gone", async () => {
    const { id } = await control<{ id: string }>(emu, "/token-exchange-profiles", {});
    const run = await cli(["token-exchange-profiles", "delete", id]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`deleted token exchange profile ${id}\n`);
    expect((await control<{ ids: string[] }>(emu, "/token-exchange-profiles")).ids).not.toContain(id);
  });
});

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type AddressInfo } from "node:net";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { explicitPorts } from "../helpers/explicit-ports.js";
import { loggedUrl } from "../helpers/log-lines.js";
import { until } from "../helpers/until.js";
import { userEvent } from "../helpers/fixtures.js";
import { basicAuthorization } from "../helpers/credentials.js";
import { builtCli } from "../helpers/start-service-process.js";

const cli = builtCli();

function run(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [cli, ...args], { env: { PATH: process.env.PATH, ARCHIVE: "off", ...explicitPorts(args, env) }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return { child, output: () => ({ stdout, stderr }) };
}

describe("streamkeeper start", () => {
  it("when settings are bad, then it exits 2 with one error line naming each", async () => {
    const { child, output } = run(["start"], { PORT: "http", WEBHOOK_AUTH: "bearer" });
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    const lines = output().stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: bad configuration: PORT: .*"http"/);
  });

  it("when --role is unknown, then it exits 2 and says which roles exist", async () => {
    const { child, output } = run(["start", "--role", "both"], {});
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    expect(output().stderr).toMatch(/^error: .*both.*all, receiver, worker/);
  });

  it.each(["all", "receiver", "worker"])("when no route is configured, then --role %s is refused: exit 2, one line naming ROUTES_FILE and DOWNSTREAM_URL", async (role) => {
    const { child, output } = run(["start", "--role", role], {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: await mkdtemp(join(tmpdir(), "sk-noroute-")),
      HOST: "127.0.0.1",
      PORT: "0",
      ADMIN_PORT: "0",
      WEBHOOK_USERNAME: "tenant",
      WEBHOOK_PASSWORD: "s3cret-webhook-password",
    });
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    expect(output().stderr.trim().split("\n")).toEqual([
      "error: bad configuration: no downstream route: set ROUTES_FILE (a YAML or JSON file of routes) or DOWNSTREAM_URL (one route for every event); without one, every event would be stored and delivered nowhere",
    ]);
  });

  it("when a route's match pattern matches no tenant event type, then the start warns with the nearest one", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-typo-"));
    const routesFile = join(dataDir, "routes.yaml");
    await writeFile(routesFile, "- name: users\n  match: usr.*\n  url: http://127.0.0.1:9/\n");
    const { child, output } = run(["start", "--role", "worker"], {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: dataDir,
      ADMIN_PORT: "0",
      ROUTES_FILE: routesFile,
    });
    try {
      // Logged as the routes are read, before anything else starts.
      for (const deadline = Date.now() + 60_000; !output().stdout.includes("usr.*"); await new Promise((ok) => setTimeout(ok, 50))) {
        expect(Date.now(), `no warning: ${output().stdout}${output().stderr}`).toBeLessThan(deadline);
      }
      const warning = output().stdout.split("\n").find((line) => line.includes("usr.*"));
      expect(JSON.parse(warning ?? "{}")).toMatchObject({
        level: 40,
        msg: "route users: match usr.* matches no event type the tenant sends: did you mean user.*?; this pattern sends the route nothing (fix it in ROUTES_FILE)",
      });
    } finally {
      child.kill("SIGTERM");
      await once(child, "close");
    }
  });

  it("when PORT is already in use, then it exits 2 naming PORT, and does not linger", async () => {
    const blocker = createServer();
    await new Promise<void>((ok) => blocker.listen(0, "127.0.0.1", ok));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const { child, output } = run(["start", "--role", "receiver"], {
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: `test-${randomUUID()}`,
        DATA_DIR: await mkdtemp(join(tmpdir(), "sk-port-")),
        HOST: "127.0.0.1",
        PORT: String(port),
        ADMIN_PORT: "0",
        LOG_LEVEL: "silent",
        DOWNSTREAM_URL: "http://127.0.0.1:9/",
      });
      const [code] = await once(child, "close");
      expect(code).toBe(2);
      expect(output().stderr).toMatch(new RegExp(`^error: bad configuration: PORT ${port} is already in use`));
    } finally {
      blocker.close();
    }
  });

  it("when HOST is not an address of this machine, then it exits 2 naming HOST and what to give", async () => {
    // 192.0.2.1 (TEST-NET-1, RFC 5737) is no interface's address here: bind fails with EADDRNOTAVAIL.
    const { child, output } = run(["start", "--role", "receiver"], {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: await mkdtemp(join(tmpdir(), "sk-host-")),
      HOST: "192.0.2.1",
      PORT: "0",
      ADMIN_PORT: "0",
      LOG_LEVEL: "silent",
      DOWNSTREAM_URL: "http://127.0.0.1:9/",
    });
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    expect(output().stderr).toBe("error: bad configuration: HOST 192.0.2.1 is not an address of this machine: give one of its own (127.0.0.1, or 0.0.0.0 for every interface)\n");
  });

  it.each([
    ["generated credentials", {}, "keep the generated webhook credentials (ENOTDIR): give a folder this user can write, or set WEBHOOK_USERNAME and WEBHOOK_PASSWORD"],
    ["the generated admin token", { WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: "s3cret-webhook-password" }, "keep the generated admin token (ENOTDIR): give a folder this user can write, or set ADMIN_TOKEN"],
    ["the embedded redis-server", { WEBHOOK_USERNAME: "tenant", WEBHOOK_PASSWORD: "s3cret-webhook-password", ADMIN_TOKEN: "an-admin-token" }, "run the embedded redis-server (ENOTDIR): give a folder this user can write, or set REDIS_URL to a Redis of your own"],
  ])("when DATA_DIR cannot be written (%s), then it exits 2 naming DATA_DIR and what to set instead", async (_, env, problem) => {
    const file = join(await mkdtemp(join(tmpdir(), "sk-datadir-")), "a-file");
    await writeFile(file, "");
    const dataDir = join(file, "data");
    const { child, output } = run(["start", "--role", "receiver"], { ...env, DATA_DIR: dataDir, PORT: "0", ADMIN_PORT: "0", LOG_LEVEL: "silent", DOWNSTREAM_URL: "http://127.0.0.1:9/" });
    const [code] = await once(child, "close");
    expect(code).toBe(2);
    expect(output().stderr).toBe(`error: bad configuration: DATA_DIR ${dataDir} cannot be used to ${problem}\n`);
  });

  it("when started with no credentials configured, then it generates them, takes an event, and stops cleanly on SIGTERM", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "sk-start-"));
    // Ports 0, read back from the log: a port picked free beforehand may be taken by a
    // parallel test before the service binds it.
    const { child, output } = run(["start", "--role", "receiver"], {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: dataDir,
      PORT: "0",
      ADMIN_PORT: "0",
      DOWNSTREAM_URL: "http://127.0.0.1:9/",
    });
    const adminUrl = await until("the admin surface listening", () => loggedUrl(output().stdout, "admin"), { withinMs: 60_000, detail: () => output().stderr });
    // The ingress listens before the admin surface does.
    const publicUrl = loggedUrl(output().stdout, "public")!;
    const credentials = JSON.parse(await readFile(join(dataDir, "webhook-credentials.json"), "utf8")) as { username: string; password: string };
    expect(output().stdout).not.toContain(credentials.password);

    const res = await fetch(`${publicUrl}/webhooks`, {
      method: "POST",
      body: JSON.stringify(userEvent()),
      headers: { "content-type": "application/json", authorization: basicAuthorization(credentials.username, credentials.password) },
    });
    expect(res.status).toBe(202);
    expect((await fetch(`${adminUrl}/readyz`)).status).toBe(200);

    child.kill("SIGTERM");
    const [code] = await once(child, "close");
    expect(code).toBe(0);
    expect(output().stdout).toContain('"msg":"stopped"');
  });
});

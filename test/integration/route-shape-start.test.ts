import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { builtCli } from "../helpers/start-service-process.js";

describe("start: a route's filter and transform are checked first", () => {
  it("when a filter has an unknown operator and a transform does not parse, then the start stops with exit 2 naming each route and its problem", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-shape-"));
    const routesFile = join(dir, "routes.yaml");
    await writeFile(
      routesFile,
      `- name: crm
  match: user.*
  url: http://127.0.0.1:9/
  filter: { data.object.app_metadata.plan: { $like: "pro%" } }
- name: slack
  match: "*"
  url: http://127.0.0.1:9/
  transform: '{"text": "user " & data.object.email'
`,
    );
    const child = spawn(process.execPath, [builtCli(), "start"], {
      env: { PATH: process.env.PATH, HOST: "127.0.0.1", PORT: "0", ADMIN_PORT: "0", ROUTES_FILE: routesFile, WEBHOOK_AUTH: "none", DATA_DIR: dir, REDIS_URL: "redis://127.0.0.1:1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const [code] = (await once(child, "close")) as [number];
    expect(code).toBe(2);
    expect(stderr).toContain(`ROUTES_FILE ${routesFile}: route crm field filter: unknown operator $like`);
    expect(stderr).toContain(`ROUTES_FILE ${routesFile}: route slack field transform: does not parse`);
    expect(stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
  });
});

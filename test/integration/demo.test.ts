import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { builtCli } from "../helpers/start-service-process.js";

const cli = builtCli();

describe("streamkeeper demo", () => {
  it("when run on a machine with only redis-server on PATH, then it tells the story to the end: an event fails at the tenant and the sweep recovers it once, with no reconcile command, and an event the push never sends arrives by pull", async () => {
    const child = spawn(process.execPath, [cli, "demo"], { env: { PATH: process.env.PATH }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const [code] = await once(child, "close");
    expect(code, stderr).toBe(0);
    const lost = /organization event (evt_\w{22})/.exec(stdout)?.[1];
    expect(lost).toBeDefined();
    expect(stdout).toMatch(new RegExp(`the tenant gave up on ${lost} after 1 attempt\\(s\\): HTTP 401`));
    expect(stdout).toContain(`${lost} recovered by the sweep, found without being told`);
    expect(stdout).toContain("nobody runs reconcile");
    expect(stdout).toContain(`downstream received ${lost} (organization.created, origin reconcile, route default)`);
    // Each line is one delivery to one route: a user event shows once for each of the two routes, never as a bare repeat.
    const received = stdout.split("\n").filter((line) => line.includes("downstream received"));
    expect(new Set(received).size).toBe(received.length);
    expect(stdout).toMatch(/10\. done: .*delivered once/);
    // The event no stream subscribes to came by the pull.
    const unpushed = /9\. tenant emitted (evt_\w+) \(group\.created\)/.exec(stdout)?.[1];
    expect(unpushed).toBeDefined();
    expect(stdout).toContain(`downstream received ${unpushed} (group.created, origin pull, route default)`);
    expect(stdout.match(new RegExp(`downstream received ${lost}`, "g"))).toHaveLength(1);
    expect(stdout).toMatch(/dashboard: http:\/\/127\.0\.0\.1:\d+\/admin\/queues/);
    // The archive (an embedded Postgres): a search by user, then a replay.
    expect(stdout).toMatch(/11\. what happened to user auth0\|\w+\? streamkeeper events search --entity/);
    expect(stdout.match(/ {3}evt_\w{22} {2}\S+ {2}user\.(created|updated) {2}origin webhook {2}default=delivered/g)).toHaveLength(2);
    expect(stdout).toMatch(/replay rpl_\w+: 3 matched, 3 sent, 3 delivered/);
    expect(stdout.match(/origin replay, route default\)/g)).toHaveLength(3);
    // The tenant's test button: delivered on one route, left out on the route that drops test events.
    const test = /13\. the tenant's "send a test event" button \(POST \/api\/v2\/event-streams\/est_\w+\/test\) sent (evt_\w+), marked a0purpose "test"/.exec(stdout)?.[1];
    expect(test).toBeDefined();
    expect(stdout).toContain("route default delivered it; route audit (testEvents: drop) left it out: filtered");
    expect(stdout.match(new RegExp(`downstream received ${test}`, "g"))).toHaveLength(1);
  });
});

import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { runCli } from "../chaos/run-cli.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { createStream, emit, settled, startSink, tenantEnv, type Sink } from "./emulator-test-kit.js";
import { refusedPort } from "../helpers/explicit-ports.js";

/**
 * Commands that act on the service go through one door, its admin API: the service runs
 * with its real Redis and tenant; the command's shell names a Redis on a port where
 * nothing listens and no tenant, so a command that reached for either would fail.
 */
const adminToken = "one-door-admin-token";
let emulator: Emulator;
let sink: Sink;
let service: TestService;
let shellDir: string;
let shellEnv: Record<string, string>;

beforeAll(async () => {
  emulator = await startEmulator({ timeScale: 0.01 });
  // Every delivery refused with a 400: each event becomes a dead letter at its first attempt.
  sink = await startSink(() => 400);
  service = await startTestService({ DOWNSTREAM_URL: sink.url, ...tenantEnv(emulator), RECONCILE_RATE_PER_SECOND: "20", ADMIN_TOKEN: adminToken });
  shellDir = await mkdtemp(join(tmpdir(), "sk-one-door-"));
  shellEnv = { REDIS_URL: `redis://127.0.0.1:${refusedPort}`, DATA_DIR: shellDir, ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn" };
});

afterAll(async () => {
  await service?.close();
  await sink?.close();
  await emulator?.close();
  if (shellDir) await rm(shellDir, { recursive: true, force: true });
});

async function deadLetterOf(eventId: string): Promise<unknown> {
  for (;;) {
    const answer = await fetch(`${service.adminUrl}/admin/dead-letters`, { headers: { authorization: `Bearer ${adminToken}` } });
    const { deadLetters } = (await answer.json()) as { deadLetters: Array<{ eventId: string }> };
    const found = deadLetters.find((letter) => letter.eventId === eventId);
    if (found) return found;
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

describe("commands through the admin API", () => {
  it("when the shell's Redis is unreachable and it has no tenant settings, then reconcile <id> recovers the event and dead-letters lists and replays it, all through the service", async () => {
    await createStream(emulator, `${service.publicUrl}/webhooks`, { auth: { method: "basic", username: testCredentials.username, password: "not-the-password" }, types: ["user.created"] });
    const id = await emit(emulator, "user.created", { object: { user_id: `auth0|${randomUUID()}`, email: "door@example.com" } });
    expect((await settled(emulator, id)).status).toBe("failed");

    const reconciled = await runCli(["reconcile", id], shellEnv);
    expect(reconciled).toMatchObject({ code: 0, stdout: `${id} recovered\n` });

    await deadLetterOf(id);
    const listed = await runCli(["dead-letters", "list", "--json"], shellEnv);
    expect(listed.code, listed.stderr).toBe(0);
    const letters = JSON.parse(listed.stdout) as Array<{ route: string; eventId: string; jobId: string }>;
    expect(letters.map((letter) => [letter.route, letter.eventId])).toEqual([["default", id]]);

    const requestsBefore = sink.requests.length;
    const replayed = await runCli(["dead-letters", "replay", `default/${letters[0]!.jobId}`], shellEnv);
    expect(replayed).toMatchObject({ code: 0, stdout: `replayed default/${letters[0]!.jobId}\n` });
    // Delivered again by the service (and refused again): the replay reached its queue.
    await deadLetterOf(id);
    expect(sink.requests.length).toBeGreaterThan(requestsBefore);
  });
});

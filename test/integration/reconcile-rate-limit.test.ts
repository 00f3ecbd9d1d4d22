import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { call, createStream, emit, getToken, type ControlDelivery, tenantEnv } from "./emulator-test-kit.js";
import { builtCli } from "../helpers/start-service-process.js";

/**
 * 400 ids through `streamkeeper reconcile --file` against an emulator that enforces
 * 50 API requests a second, with RECONCILE_RATE_SHARE=1 (the whole allowance: no other
 * client here) and RECONCILE_RATE_PER_SECOND=50: every id reaches its outcome and the
 * tenant never answers 429. 400 ids are 8 s of calls at the limit, eight times the bucket:
 * unpaced, the tenant refuses some with 429 (1,000 proved the same, 12 s slower).
 */
const main = builtCli();
const count = 400;
const rate = 50;

let emulator: Emulator;
let service: TestService;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "sk-reconcile-rate-"));
  emulator = await startEmulator({ timeScale: 0.01, rateLimit: rate });
  service = await startTestService({
    ...tenantEnv(emulator),
    RECONCILE_RATE_SHARE: "1",
    RECONCILE_RATE_PER_SECOND: String(rate),
    ADMIN_TOKEN: "rate-admin-token",
  });
});

afterAll(async () => {
  await service?.close();
  await emulator?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** `streamkeeper_mgmt_api_requests_total{operation,status}` from the service's /metrics. */
async function apiRequests(): Promise<Record<string, number>> {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^streamkeeper_mgmt_api_requests_total\{operation="(\w+)",status="(\d+)"\} (\d+)$/gm)) {
    counts[`${match[1]} ${match[2]}`] = Number(match[3]);
  }
  return counts;
}

describe("reconcile under the tenant's rate limit", () => {
  it(`when ${count} failed ids are reconciled from a file, then each reaches its outcome at the allowed pace with no 429`, { timeout: 180_000 }, async () => {
    const streamId = await createStream(emulator, `${service.publicUrl}/webhooks`, {
      auth: { method: "basic", username: testCredentials.username, password: "not-the-password" },
    });
    const ids: string[] = [];
    for (let batch = 0; batch < count; batch += 50) {
      ids.push(...(await Promise.all(Array.from({ length: 50 }, () => emit(emulator, "user.created")))));
    }
    // Our receiver answers 401, so every delivery fails at its first attempt.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { deliveries } = (await call(emulator, "GET", `/emulator/deliveries?stream_id=${streamId}`)).body as { deliveries: ControlDelivery[] };
      if (deliveries.filter((delivery) => delivery.status === "failed").length === count) break;
      expect(Date.now(), "deliveries still pending").toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const file = join(dataDir, "ids.txt");
    await writeFile(file, `# ${count} failed deliveries\n${ids.join("\n")}\n`);
    const before = await apiRequests();

    const started = performance.now();
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [main, "reconcile", "--file", file, "--json"], {
        env: {
          PATH: process.env.PATH ?? "",
          // The running service reconciles (its admin API); the command never reads Redis.
          ADMIN_URL: service.adminUrl,
          ADMIN_TOKEN: "rate-admin-token",
          LOG_LEVEL: "warn",
        },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
    const seconds = (performance.now() - started) / 1000;

    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const results = run.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { eventId: string; streamId: string; outcome: string });
    expect(results).toHaveLength(count);
    expect(new Set(results.map((result) => result.eventId))).toEqual(new Set(ids));
    expect(results.every((result) => result.outcome === "recovered" && result.streamId === streamId)).toBe(true);

    const after = await apiRequests();
    const delta = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
    // One listing of the streams (cached), one history read per id, not one 429.
    expect(delta("list_event_streams 200")).toBe(1);
    expect(delta("get_delivery 200")).toBe(count);
    expect(Object.keys(after).filter((key) => key.endsWith(" 429"))).toEqual([]);
    const callsPerSecond = (count + 1) / seconds;
    expect(callsPerSecond).toBeLessThanOrEqual(rate);
    console.log(`reconcile: ${count} ids in ${seconds.toFixed(1)} s = ${(count / seconds).toFixed(1)} ids/s (allowed ${rate} calls/s), 0 responses 429`);
  });

  it("when the cap is above the tenant's limit and another client drains the bucket, then the pace follows the bucket, any 429 is held and retried: every id recovered", async () => {
    // 10 calls a second, a quarter of the cap: the share of it (5/s) recovers the 20 ids in 4 s.
    const strictRate = 10;
    const strict = await startEmulator({ timeScale: 0.01, rateLimit: strictRate });
    const fast = await startTestService({
      MGMT_API_BASE_URL: strict.apiBaseUrl,
      MGMT_TOKEN_URL: strict.tokenUrl,
      MGMT_CLIENT_ID: "emulator-client",
      MGMT_CLIENT_SECRET: "emulator-secret",
      RECONCILE_RATE_PER_SECOND: "40",
      ADMIN_TOKEN: "admin-token",
    });
    try {
      const streamId = await createStream(strict, `${fast.publicUrl}/webhooks`, {
        auth: { method: "basic", username: testCredentials.username, password: "not-the-password" },
      });
      const ids = await Promise.all(Array.from({ length: 20 }, () => emit(strict, "user.created")));
      for (;;) {
        const { deliveries } = (await call(strict, "GET", `/emulator/deliveries?stream_id=${streamId}`)).body as { deliveries: ControlDelivery[] };
        if (deliveries.filter((delivery) => delivery.status === "failed").length === ids.length) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // Another application of the same tenant (the same client, so the same bucket)
      // takes every request the bucket refills for 4 s: longer than our client's retries last.
      const token = await getToken(strict);
      const drainUntil = Date.now() + 4000;
      const drain = (async () => {
        while (Date.now() < drainUntil) await (await fetch(`${strict.apiBaseUrl}/event-streams`, { headers: { authorization: `Bearer ${token}` } })).text();
      })();

      const headers = { authorization: "Bearer admin-token", "content-type": "application/json" };
      const posted = await fetch(`${fast.adminUrl}/admin/reconcile`, { method: "POST", headers, body: JSON.stringify({ eventIds: ids, streamId }) });
      const { jobs } = (await posted.json()) as { jobs: { eventId: string; jobId: string }[] };
      const outcomes = await Promise.all(
        jobs.map(async ({ jobId }) => {
          for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
            const job = (await (await fetch(`${fast.adminUrl}/admin/reconcile/${jobId}`, { headers })).json()) as { state: string; outcome: string | null };
            if (job.outcome) return job.outcome;
          }
          return "timed out";
        }),
      );
      await drain;
      expect(outcomes).toEqual(ids.map(() => "recovered"));
      const text = await (await fetch(`${fast.adminUrl}/metrics`)).text();
      const refused = Number(/^streamkeeper_mgmt_api_requests_total\{operation="get_delivery",status="429"\} (\d+)/m.exec(text)?.[1] ?? 0);
      // RECONCILE_RATE_PER_SECOND=40 is no licence to exceed the tenant: the pace is held to
      // the share (0.5) of the 10 calls/s bucket it shows, and an empty bucket holds every call
      // until its reset, so the drain costs time, and any 429 it still causes is retried.
      const pace = /^streamkeeper_mgmt_api_pace_per_second\{limit="(\w+)"\} ([\d.]+)$/m.exec(text);
      expect(pace?.[1]).toBe("bucket");
      expect(Number(pace?.[2])).toBeLessThanOrEqual(strictRate * 0.5);
      console.log(`reconcile at 40 calls/s against a ${strictRate}/s limit drained by another client: ${ids.length} ids recovered, ${refused} responses 429 held and retried`);
    } finally {
      await fast.close();
      await strict.close();
    }
  });
});

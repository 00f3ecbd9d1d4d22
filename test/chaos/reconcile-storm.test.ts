import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { startTestService, testCredentials } from "../helpers/start-test-service.js";
import { call, createStream, emit, type ControlDelivery } from "../integration/emulator-test-kit.js";
import { startChaosSink } from "./chaos-sink.js";
import { recordChaosResult } from "./record-chaos-result.js";
import { routeFigures } from "./route-figures.js";
import { runCli } from "./run-cli.js";
import { startFaultProxy, type InjectedFault } from "./start-fault-proxy.js";
import { useCleanup } from "../helpers/cleanup.js";

const count = 1000;

/**
 * The storm, repeating every 6 s once armed: 1.5 s of 429 (with the tenant's
 * Retry-After and X-RateLimit-* headers, docs/tenant.md#rate-limits), then 0.8 s of 500/502/503, then
 * 3.7 s of calm. Only the management API is hit (`/api/v2`); tokens pass. A 5xx window
 * shorter than the client's retry span (0.25 + 0.5 + 1 s at least, retry-decision.ts)
 * is one the client must ride out; a longer outage would rightly end in `error:`.
 */
function storm(elapsedMs: number, path: string): InjectedFault | undefined {
  if (!path.startsWith("/api/v2")) return undefined;
  const phase = elapsedMs % 6000;
  if (phase < 1500) {
    const reset = Math.ceil((Date.now() + 1000) / 1000);
    return {
      status: 429,
      headers: { "retry-after": "1", "x-ratelimit-limit": "50", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) },
      body: JSON.stringify({ statusCode: 429, error: "Too Many Requests", message: "Global limit has been reached", errorCode: "too_many_requests" }),
    };
  }
  if (phase < 2300) {
    const status = [500, 502, 503][Math.floor(phase / 100) % 3]!;
    return { status, body: JSON.stringify({ statusCode: status, error: "Server Error", message: "storm" }) };
  }
  return undefined;
}

/**
 * Scenario 4 (docs/reliability.md): `streamkeeper reconcile --file` (its own process)
 * recovers 1,000 events whose delivery to us failed, while the tenant API answers in
 * storms of 429 and 5xx. Every id must reach an outcome, none an `error:` (the client
 * retries, the 429s hold the queue), and each recovered event reach the downstream once.
 */
describe("chaos: tenant API storms during a reconcile", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it(`when ${count} ids are reconciled while the tenant answers 429 and 5xx storms, then every id is recovered, none an error, each delivered once`, async () => {
    const started = Date.now();
    const dir = await mkdtemp(join(tmpdir(), "sk-chaos-storm-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const emulator = await startEmulator({ timeScale: 0.01 });
    cleanup.push(() => emulator.close());
    let armedAt: number | undefined;
    const proxy = await startFaultProxy(emulator.url, (path) => (armedAt === undefined ? undefined : storm(Date.now() - armedAt, path)));
    cleanup.push(() => proxy.close());
    const sink = await startChaosSink();
    cleanup.push(() => sink.close());
    const service = await startTestService({
      MGMT_API_BASE_URL: `${proxy.url}/api/v2`,
      MGMT_TOKEN_URL: `${proxy.url}/oauth/token`,
      MGMT_AUDIENCE: emulator.audience,
      MGMT_CLIENT_ID: "emulator-client",
      MGMT_CLIENT_SECRET: "emulator-secret",
      RECONCILE_RATE_PER_SECOND: "100",
      DOWNSTREAM_URL: sink.url,
      ADMIN_TOKEN: "storm-admin-token",
    });
    cleanup.push(() => service.close());

    // Failed deliveries to reconcile: the stream sends a wrong password, so our receiver
    // answers 401 and the tenant marks each delivery failed at once, payload kept.
    const streamId = await createStream(emulator, `${service.publicUrl}/webhooks`, {
      auth: { method: "basic", username: testCredentials.username, password: "not-the-password" },
    });
    const ids: string[] = [];
    for (let batch = 0; batch < count; batch += 50) ids.push(...(await Promise.all(Array.from({ length: 50 }, () => emit(emulator, "user.created")))));
    for (const deadline = Date.now() + 60_000; ; await new Promise((ok) => setTimeout(ok, 200))) {
      const { deliveries } = (await call(emulator, "GET", `/emulator/deliveries?stream_id=${streamId}`)).body as { deliveries: ControlDelivery[] };
      if (deliveries.filter((delivery) => delivery.status === "failed").length === count) break;
      expect(Date.now(), "the tenant's deliveries are still pending").toBeLessThan(deadline);
    }
    const file = join(dir, "ids.txt");
    await writeFile(file, `${ids.join("\n")}\n`);

    armedAt = Date.now();
    // The running service reconciles; the command reaches it through its admin API only.
    const run = await runCli(["reconcile", "--file", file, "--json"], { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: "storm-admin-token", LOG_LEVEL: "warn" }, 240_000);
    const reconcileMs = Date.now() - armedAt;
    armedAt = undefined;

    const results = run.stdout.trimEnd().split("\n").filter(Boolean).map((line) => JSON.parse(line) as { eventId: string; outcome: string });
    const outcomes: Record<string, number> = {};
    for (const result of results) outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
    expect(run.stderr, "the CLI reported an error").not.toMatch(/^error:/m);
    expect(new Set(results.map((result) => result.eventId))).toEqual(new Set(ids));
    const recovered = results.filter((result) => result.outcome === "recovered").map((result) => result.eventId);
    await sink.untilAccepted(recovered, 120_000);

    const routes = [routeFigures("default", sink, recovered, 0)];
    await recordChaosResult("reconcile-storm", {
      fault: "tenant API: 1.5 s of 429 then 0.8 s of 5xx every 6 s, during a reconcile of 1,000 ids (CLI in its own process)",
      acknowledged: recovered.length,
      ids: count,
      outcomes,
      injected: proxy.counts.injected,
      passed: proxy.counts.passed,
      reconcileSeconds: Number((reconcileMs / 1000).toFixed(1)),
      routes,
      durationMs: Date.now() - started,
    });
    expect(outcomes).toEqual({ recovered: count });
    expect(run.code).toBe(0);
    expect(proxy.counts.injected["429"] ?? 0, "the storm hit the reconcile").toBeGreaterThan(0);
    expect((proxy.counts.injected["500"] ?? 0) + (proxy.counts.injected["502"] ?? 0) + (proxy.counts.injected["503"] ?? 0)).toBeGreaterThan(0);
    expect(routes[0]!.lost).toBe(0);
    expect(routes[0]!.repeats).toBe(0);
  }, 360_000);
});

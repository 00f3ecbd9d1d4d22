import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { inspectStore } from "../helpers/inspect-store.js";
import { startTestService } from "../helpers/start-test-service.js";
import { startChaosSink, type SinkDecision } from "./chaos-sink.js";
import { recordChaosResult } from "./record-chaos-result.js";
import { routeFigures } from "./route-figures.js";
import { startLoadDriver } from "./start-load-driver.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { seededRandom, testSeed } from "../helpers/test-seed.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";

/** The issue asks for a minute; 20 s by default keeps the suite short. CHAOS_FLAP_SECONDS=60 for the full run. */
const flapSeconds = Number(process.env.CHAOS_FLAP_SECONDS ?? 20);
const timeoutMs = 500;

/**
 * Scenario 3 (docs/reliability.md): one route's downstream flaps for CHAOS_FLAP_SECONDS:
 * half its answers are 5xx and a tenth never come within the route's timeout. The other
 * route stays healthy. Every acknowledged event must reach both, each accepted exactly
 * once: retries go only to the failing route, and a success is never sent again.
 */
describe("chaos: a downstream route flapping", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it(`when a route answers 50% 5xx and some timeouts for ${flapSeconds} s under load, then everything acknowledged reaches it, repeated only where an accepted answer came after the timeout, and the healthy route the same`, async () => {
    const started = Date.now();
    const dir = await mkdtemp(join(tmpdir(), "sk-chaos-flap-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    // Which answers fail: seeded, so a failing run's pattern can be asked for again.
    const random = seededRandom(testSeed("route-flap"));
    let flapUntil = Number.POSITIVE_INFINITY;
    const faults = { "5xx": 0, timeout: 0 };
    const flapping = await startChaosSink((): SinkDecision => {
      if (Date.now() >= flapUntil) return { status: 200 };
      const roll = random();
      if (roll < 0.5) {
        faults["5xx"]++;
        return { status: [500, 502, 503][Math.floor(roll * 6)]! };
      }
      if (roll < 0.6) {
        faults.timeout++;
        // Held past the route's timeout; the late answer is an error, so it never counts as received.
        return { status: 504, delayMs: timeoutMs * 3 };
      }
      return { status: 200 };
    });
    const steady = await startChaosSink();
    cleanup.push(() => flapping.close(), () => steady.close());
    const routesFile = join(dir, "routes.json");
    await writeFile(
      routesFile,
      JSON.stringify([
        { name: "flapping", match: "*", url: flapping.url, concurrency: 8, timeoutMs, maxAttemptsPerEvent: 1000 },
        { name: "steady", match: "*", url: steady.url, concurrency: 4 },
      ]),
    );
    // Debug: each failed attempt is logged with its reason, the circuit's held ones too.
    const logs = capturedLogger("debug");
    const service = await startTestService(
      {
        ROUTES_FILE: routesFile,
        DISPATCH_BACKOFF_BASE_MS: "100",
        DISPATCH_BACKOFF_MAX_MS: "2000",
      },
      "all",
      logs.logger,
    );
    cleanup.push(() => service.close());

    flapUntil = Date.now() + flapSeconds * 1000;
    const driver = await startLoadDriver({ url: `${service.publicUrl}/webhooks`, authorization, ratePerSecond: 20, durationMs: flapSeconds * 1000 });
    cleanup.push(async () => driver.kill());
    const load = await driver.finished;
    expect(load.refused, "answers other than 202/503 to valid events").toEqual([]);
    const acknowledged = new Set(load.acknowledged);
    await Promise.all([flapping, steady].map((sink) => sink.untilAccepted(acknowledged, 120_000)));

    const store = await inspectStore(service.config);
    cleanup.push(() => store.close());
    const deadLetters = (await store.queues.forRoute("flapping").getFailedCount()) + (await store.queues.forRoute("steady").getFailedCount());
    // No kill here, so a repeat has one cause only: the downstream accepted the event but
    // its answer came after the route's timeoutMs, so the worker could not know (README:
    // the downstream drops a repeat by its webhook-id). On a loaded machine that happens
    // to a real 200 too, so each route's bound is this run's own count of attempts that
    // ended with no answer, less the timeouts the sink injected (those it never accepted).
    const noAnswer = (route: string) => logs.lines.filter((line) => line.route === route && String(line.reason ?? "").startsWith("no answer within")).length;
    const repeatBound = { flapping: Math.max(0, noAnswer("flapping") - faults.timeout), steady: noAnswer("steady") };
    const routes = [routeFigures("flapping", flapping, acknowledged, repeatBound.flapping), routeFigures("steady", steady, acknowledged, repeatBound.steady)];
    await recordChaosResult("route-flap", {
      fault: `route "flapping" answers 50% 5xx and 10% timeouts (> ${timeoutMs} ms) for ${flapSeconds} s; route "steady" healthy`,
      acknowledged: acknowledged.size,
      flapSeconds,
      injected5xx: faults["5xx"],
      injectedTimeouts: faults.timeout,
      deadLetters,
      routes,
      durationMs: Date.now() - started,
    });
    expect(faults["5xx"]).toBeGreaterThan(0);
    expect(deadLetters).toBe(0);
    for (const route of routes) {
      expect(route.lost, `route ${route.route}`).toBe(0);
      expect(route.repeats, `route ${route.route}: ${route.repeats} repeats, ${noAnswer(route.route)} attempts without an answer (${faults.timeout} injected on flapping)`).toBeLessThanOrEqual(route.repeatBound);
    }
    // The flapping route was retried; the healthy one got one request per event.
    expect(routes[0]!.requests).toBeGreaterThan(acknowledged.size);
    expect(routes[1]!.requests).toBe(steady.accepted().size);
  }, 60_000 + flapSeconds * 3000);
});

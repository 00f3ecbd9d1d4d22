import { describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { refusedUrl } from "../helpers/explicit-ports.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { tenantEnv } from "./emulator-test-kit.js";
import { byEventId, failWhileDown, sweepStatus, sweepingEnv, until } from "./sweep-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";

/** The sweeps one process logged: when each ran, from its end time and duration. */
function sweepsOf(service: ServiceProcess): Array<{ start: number; end: number }> {
  return service
    .output()
    .split("\n")
    .filter((line) => line.includes('"sweep: stream read up to now"'))
    .map((line) => JSON.parse(line) as { time: number; ms: number })
    .map(({ time, ms }) => ({ start: time - ms, end: time }));
}

/**
 * "Exactly one sweeper at a time across any number of worker processes" (README.md#the-sweep-failed-deliveries-found-without-being-told):
 * two workers sweep the same stream for a while; their sweeps never overlap in time, and
 * each failed delivery reaches the downstream once.
 */
describe("sweep: one sweeper across processes", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when two worker processes run, then their sweeps never overlap and each failed delivery is recovered once", async () => {
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    // Nothing listens at PUBLIC_URL: both processes are workers, the stream's deliveries all fail.
    const publicUrl = refusedUrl;
    const { lost } = await failWhileDown(emulator, publicUrl, 130);
    // A slow pace (5 calls/s across both), so a first sweep takes seconds: long enough for
    // two unguarded sweepers to overlap.
    const env = sweepingEnv({ publicUrl, sinkUrl: sink.url, tenant: tenantEnv(emulator) }, { RECONCILE_RATE_PER_SECOND: "5", LOG_LEVEL: "debug" });
    const workers = [await startServiceProcess("worker", env), await startServiceProcess("worker", env)];
    for (const worker of workers) cleanup.push(() => worker.stop());

    await sink.until((requests) => byEventId(requests).size >= 130, 90_000);
    await until("six sweeps in all", async () => workers.flatMap(sweepsOf).length >= 6, 90_000);
    const seen = byEventId(sink.requests);
    for (const id of lost) expect(seen.get(id), id).toEqual(["reconcile"]);
    expect((await sweepStatus(workers[0]!)).streams).toEqual([expect.objectContaining({ found: 130, recovered: 130 })]);

    const sweeps = workers.flatMap(sweepsOf).sort((a, b) => a.start - b.start);
    for (let at = 1; at < sweeps.length; at++) expect(sweeps[at]!.start, `sweep ${at} began before sweep ${at - 1} ended`).toBeGreaterThanOrEqual(sweeps[at - 1]!.end);
  });
});

import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { sweepKey } from "../../src/queue/queue-names.js";
import { startFaultProxy } from "../chaos/start-fault-proxy.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { tenantEnv } from "./emulator-test-kit.js";
import { byEventId, counterValue, failWhileDown, sweepStatus, sweepingEnv, until } from "./sweep-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";

const hourMs = 3_600_000;

/** The sweep against faults: a process killed mid-sweep, a tenant answering 429 and 5xx. */
describe("sweep under faults", () => {
  const cleanup = useCleanup("each", { quiet: true });

  it("when the sweeping process is killed mid-sweep and another starts, then nothing is missed and the finished windows are not read again", async () => {
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const { lost } = await failWhileDown(emulator, publicUrl, 130);
    // A slow pace (2 calls/s), so the first sweep's 24 one-hour windows of the default
    // day of lookback take about 12 s: time to kill it midway.
    const env = sweepingEnv({ publicUrl, sinkUrl: sink.url, tenant: tenantEnv(emulator) }, { RECONCILE_RATE_PER_SECOND: "2" });
    const first = await startServiceProcess("all", env);
    cleanup.push(() => first.kill());
    door.open(first.publicUrl!);
    let killedAt: number | undefined;
    await until("the first sweep halfway through its windows", async () => {
      const [stream] = (await sweepStatus(first)).streams;
      if (!stream?.checkpoint || Date.parse(stream.checkpoint) < Date.now() - 18 * hourMs) return false;
      expect(stream.lastRunAt, "the first sweep ended before the test could kill it").toBeNull();
      killedAt = Date.parse(stream.checkpoint);
      return true;
    });
    await first.kill();
    door.shut();
    // The killed sweeper's lease lapses within 5 s (its least, at a 1 s interval). The second
    // process is started once it has: one started while it is held tries again at its next
    // tick, 15 s later at the hour's interval below, a wait that would prove nothing more.
    const redis = new Redis(env.REDIS_URL!);
    cleanup.push(async () => void redis.disconnect());
    await until("the killed sweeper's lease lapsed", async () => (await redis.exists(sweepKey(env.QUEUE_PREFIX!, "lease"))) === 0);

    // One sweep only in the second process (its interval an hour; the first sweep runs at
    // its start): the calls counted below are that sweep's, however long a loaded machine
    // takes between its end and the metrics read (later sweeps would each add a call). Its
    // pace uncapped: only the first sweep had to be slow enough to be killed midway.
    const secondEnv: Record<string, string> = { ...env, RECONCILE_SWEEP_INTERVAL_SECONDS: "3600" };
    delete secondEnv.RECONCILE_RATE_PER_SECOND;
    const second = await startServiceProcess("all", secondEnv);
    cleanup.push(() => second.stop());
    door.open(second.publicUrl!);
    await sink.until((requests) => byEventId(requests).size >= 130, 90_000);
    await until("the second process's sweep done", async () => (await sweepStatus(second)).streams[0]?.lastRunAt !== null);
    const seen = byEventId(sink.requests);
    for (const id of lost) expect(seen.get(id), id).toEqual(["reconcile"]);

    // From the checkpoint (less the 10-minute overlap) to now, one call a window, one more
    // for the second page of the window holding the 130: fewer than the 24 from scratch.
    const metrics = await (await fetch(`${second.adminUrl}/metrics`)).text();
    const calls = counterValue(metrics, "streamkeeper_mgmt_api_requests_total", 'operation="list_deliveries",status="200"');
    const windowsLeft = Math.ceil((Date.now() - killedAt! + 600_000) / hourMs);
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBeLessThanOrEqual(windowsLeft + 2);
    expect(calls).toBeLessThan(24);
  });

  it("when the tenant answers 429 and 5xx to the sweep's list calls, then every failed delivery is still recovered once", async () => {
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    // Every third list call is refused: 429 with the tenant's headers, else 503.
    let listCalls = 0;
    const proxy = await startFaultProxy(emulator.url, (path) => {
      if (!/\/deliveries\?/.test(path)) return undefined;
      listCalls++;
      if (listCalls % 3 !== 0) return undefined;
      if (listCalls % 2 === 0) return { status: 503, body: JSON.stringify({ statusCode: 503, error: "Service Unavailable", message: "storm" }) };
      const reset = String(Math.ceil(Date.now() / 1000) + 1);
      return {
        status: 429,
        headers: { "retry-after": "1", "x-ratelimit-limit": "50", "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset },
        body: JSON.stringify({ statusCode: 429, error: "Too Many Requests", message: "Global limit has been reached", errorCode: "too_many_requests" }),
      };
    });
    cleanup.push(() => proxy.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const { lost } = await failWhileDown(emulator, publicUrl, 130);
    const tenant = { ...tenantEnv(emulator), MGMT_API_BASE_URL: `${proxy.url}/api/v2`, MGMT_AUDIENCE: emulator.audience };
    const service = await startServiceProcess("all", sweepingEnv({ publicUrl, sinkUrl: sink.url, tenant }));
    cleanup.push(() => service.stop());
    door.open(service.publicUrl!);

    await sink.until((requests) => byEventId(requests).size >= 130, 120_000);
    const later = (await sweepStatus(service)).streams[0]?.lastRunAt ?? "";
    await until("one more complete sweep", async () => ((await sweepStatus(service)).streams[0]?.lastRunAt ?? "") > later);
    const seen = byEventId(sink.requests);
    for (const id of lost) expect(seen.get(id), id).toEqual(["reconcile"]);
    expect(seen.size).toBe(130);
    expect(proxy.counts.injected["429"]).toBeGreaterThan(0);
    expect(proxy.counts.injected["503"]).toBeGreaterThan(0);
  });
});

import { describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../../src/emulator/start-emulator.js";
import { openEventLog } from "../../../src/tenant/open-event-log.js";
import { createTenantClient } from "../../../src/tenant/create-tenant-client.js";
import { userEvent } from "../../helpers/fixtures.js";
import { useCleanup } from "../../helpers/cleanup.js";
import { until } from "../../helpers/until.js";
import { emitWithOffsets, keptOffset, metricValue, metricsOf, pullStatus, startPulling } from "./pull-test-kit.js";

const MiB = 1_048_576;

async function huge(emulator: Emulator, body: { bytes: number } | { endless: true }): Promise<{ id: string; offset: string }> {
  const answer = await fetch(`${emulator.url}/emulator/events/huge`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(answer.status).toBe(202);
  return (await answer.json()) as { id: string; offset: string };
}

async function paddingSent(emulator: Emulator): Promise<number> {
  return ((await (await fetch(`${emulator.url}/emulator/events-api`)).json()) as { paddingSent: number }).paddingSent;
}

describe("a pulled message larger than WEBHOOK_MAX_BODY_BYTES", () => {
  const cleanup = useCleanup("each", { timeoutMs: 120000 });

  it("when a 64 MB event is pulled while webhooks arrive, then no webhook gets a 503, the event is kept aside with its first bytes, and the offset moves past it", async () => {
    const { emulator, sink, service } = await startPulling(cleanup);
    await expect.poll(async () => (await pullStatus(service.adminUrl)).state).toBe("connected");
    const before = await metricsOf(service.adminUrl);

    // 1,000 webhooks, 20 at a time, while the pull reads the 64 MB message.
    const statuses: number[] = [];
    const load = (async () => {
      for (let round = 0; round < 50; round++) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(userEvent()))));
        statuses.push(...answers.map((answer) => answer.status));
      }
    })();
    const big = await huge(emulator, { bytes: 64 * MiB });
    const after = await emitWithOffsets(emulator, 1);
    await load;
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === after.ids[0]), 60_000);

    expect(statuses.filter((status) => status !== 202)).toEqual([]);
    await expect.poll(() => keptOffset(service.config.env.QUEUE_PREFIX)).toBe(after.offsets[0]);
    const status = await pullStatus(service.adminUrl);
    expect(status.poison.count).toBe(1);
    const [kept] = status.poison.newest;
    expect(kept!.offset).toBe(big.offset);
    expect(kept!.reason).toMatch(/^a message of \d+ bytes, larger than WEBHOOK_MAX_BODY_BYTES$/);
    expect(Number(/of (\d+) bytes/.exec(kept!.reason)![1])).toBeGreaterThan(64 * MiB);
    expect(kept!.raw.length).toBeLessThanOrEqual(4096);
    expect(kept!.raw).toContain(big.id);
    expect(sink.requests.some((request) => request.headers["webhook-id"] === big.id)).toBe(false);
    expect(metricValue(await metricsOf(service.adminUrl), "streamkeeper_pull_events_total", 'result="poison"') - metricValue(before, "streamkeeper_pull_events_total", 'result="poison"')).toBe(1);
  });

  it("when a message's line never ends, then the reader holds no more of it than the bound: 256 MB read costs the process less than 96 MB", async () => {
    const emulator = await startEmulator({ eventsHeartbeatSeconds: 60 });
    cleanup.push(() => emulator.close());
    const tenant = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret" });
    const reading = new AbortController();
    cleanup.push(async () => reading.abort());
    const oversize: number[] = [];
    const stream = await openEventLog({ apiBaseUrl: emulator.apiBaseUrl, tenant, query: {}, signal: reading.signal, maxMessageBytes: MiB, onOversize: () => oversize.push(Date.now()) });
    const messages: unknown[] = [];
    const read = (async () => {
      for await (const message of stream.messages) messages.push(message);
    })().catch(() => undefined);
    const used = () => {
      const memory = process.memoryUsage();
      return memory.heapUsed + memory.arrayBuffers;
    };
    const baseline = used();
    await huge(emulator, { endless: true });
    let most = 0;
    await until("256 MB of the line read", async () => {
      most = Math.max(most, used() - baseline);
      return (await paddingSent(emulator)) >= 256 * MiB;
    }, { everyMs: 20 });
    most = Math.max(most, used() - baseline);
    stream.close();
    await read;
    expect(most).toBeLessThan(96 * MiB);
    expect(oversize).toHaveLength(1);
    expect(messages).toEqual([]);
  });
});

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { testCredentials } from "../../helpers/start-test-service.js";
import { call, control, createStream, getToken, type ControlDelivery } from "../emulator-test-kit.js";
import { deliveriesById, emitMany, metricValue, metricsOf, pullStatus, setEventsApiDown, startPulling } from "./pull-test-kit.js";
import { useCleanup } from "../../helpers/cleanup.js";

describe("pull beside push", () => {
  const cleanup = useCleanup("each", { quiet: true, timeoutMs: 180000 });

  it("when a stream is disabled for part of the run and 10% of pushes fail with a 4xx, then every event reaches the route once, and events_received_total{origin=pull} is what the push missed", async () => {
    const { emulator, sink, service } = await startPulling(cleanup);

    // Between the tenant and the service: every 10th push answered 400 (the tenant gives up on a 4xx at once).
    const pushedOk = new Set<string>();
    let pushes = 0;
    const proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      if (++pushes % 10 === 0) return void res.writeHead(400, { "content-type": "application/json" }).end('{"error":"refused by the test"}');
      const answer = await fetch(`${service.publicUrl}${req.url}`, { method: "POST", headers: { authorization: String(req.headers.authorization), "content-type": String(req.headers["content-type"]) }, body });
      if (answer.ok) pushedOk.add((JSON.parse(body.toString()) as { id: string }).id);
      res.writeHead(answer.status).end(await answer.text());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => new Promise((resolve) => proxy.close(resolve)));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const streamId = await createStream(emulator, `${proxyUrl}/webhooks`, { auth: { method: "basic", username: testCredentials.username, password: testCredentials.password }, types: ["user.created"] });
    const token = await getToken(emulator);
    const setStatus = async (status: "enabled" | "disabled") => expect((await call(emulator, "PATCH", `/api/v2/event-streams/${streamId}`, { token, body: { status } })).status).toBe(200);

    await expect.poll(async () => (await pullStatus(service.adminUrl)).state, { timeout: 20_000 }).toBe("connected");
    const before = await metricsOf(service.adminUrl);
    // The pull lags behind the push here (as after one of the tenant's disconnects), so that
    // which path brings an event is fixed: the push first, the pull for what it missed.
    await setEventsApiDown(emulator, true);
    const ids = [...(await emitMany(emulator, 100))];
    await setStatus("disabled");
    ids.push(...(await emitMany(emulator, 50)));
    await setStatus("enabled");
    ids.push(...(await emitMany(emulator, 100)));
    const settled = async () => {
      const { deliveries } = await control<{ deliveries: ControlDelivery[] }>(emulator, `/deliveries?stream_id=${streamId}`);
      return deliveries.length === 200 && deliveries.every((delivery) => delivery.status !== "pending");
    };
    await expect.poll(settled, { timeout: 60_000 }).toBe(true);
    const missed = ids.filter((id) => !pushedOk.has(id));
    // The 50 of the disabled stream and every push refused (about 10% of 200; retried pushes shift the count).
    expect(missed.length).toBeGreaterThan(50 + 10);

    await setEventsApiDown(emulator, false);
    await sink.until((requests) => new Set(requests.map((request) => request.headers["webhook-id"])).size === ids.length, 60_000);
    await expect.poll(async () => metricValue(await metricsOf(service.adminUrl), "streamkeeper_pull_events_total", 'result="duplicate"') - metricValue(before, "streamkeeper_pull_events_total", 'result="duplicate"'), { timeout: 30_000 }).toBe(ids.length - missed.length);
    const after = await metricsOf(service.adminUrl);
    const received = (origin: string) => metricValue(after, "streamkeeper_events_received_total", `type="user.created",origin="${origin}"`) - metricValue(before, "streamkeeper_events_received_total", `type="user.created",origin="${origin}"`);
    expect(received("pull")).toBe(missed.length);
    expect(received("webhook")).toBe(ids.length - missed.length);
    const seen = deliveriesById(sink.requests);
    expect(ids.filter((id) => seen.get(id)?.length !== 1)).toEqual([]);
    expect(missed.every((id) => seen.get(id)![0] === "pull")).toBe(true);
  }, 180000);
});

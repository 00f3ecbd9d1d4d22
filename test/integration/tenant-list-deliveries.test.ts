import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { createTenantClient } from "../../src/tenant/create-tenant-client.js";
import { tenantDate, tenantDateBefore } from "../../src/tenant/delivery-page.js";
import { TenantNotFoundError, TenantUnauthorizedError } from "../../src/tenant/tenant-api-error.js";
import { call, control, createStream, emit, getToken, startSink, type ControlDelivery, type Sink } from "./emulator-test-kit.js";
import { until } from "../helpers/until.js";

/**
 * The failed-deliveries list as the real tenant has it (docs/tenant.md#failed-deliveries),
 * read by our tenant client against the emulator: every page, the date rules, the filters.
 */
describe("list deliveries (tenant client against the emulator)", () => {
  let emulator: Emulator;
  let failing: Sink;
  let streamId: string;
  let failedIds: string[];
  let token: string;
  const client = () =>
    createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret" });

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.001 });
    failing = await startSink(() => 400);
    streamId = await createStream(emulator, failing.url, { types: ["user.created", "user.deleted"] });
    failedIds = [];
    for (let n = 0; n < 120; n++) failedIds.push(await emit(emulator, "user.created"));
    for (let n = 0; n < 10; n++) failedIds.push(await emit(emulator, "user.deleted"));
    // A 400 fails a delivery at once (docs/tenant.md#webhook-delivery): wait until all 130 are failed.
    await until(
      "the 130 deliveries failed",
      async () => (await control<{ deliveries: ControlDelivery[] }>(emulator, `/deliveries?stream_id=${streamId}`)).deliveries.filter((delivery) => delivery.status === "failed").length === 130,
      { everyMs: 50 },
    );
    token = await getToken(emulator);
  });
  afterAll(async () => {
    await emulator.close();
    await failing.close();
  });

  it("when 130 deliveries failed, then every page together lists each once, with its stored event, 50 a page by default", async () => {
    const sizes: number[] = [];
    const seen: string[] = [];
    for await (const page of client().deliveryPages(streamId, { statuses: ["failed"] })) {
      sizes.push(page.deliveries.length);
      for (const record of page.deliveries) {
        expect(record).toMatchObject({ status: "failed", event: { id: record.id } });
        seen.push(record.id);
      }
    }
    expect(sizes).toEqual([50, 50, 30]);
    expect(seen.sort()).toEqual([...failedIds].sort());
  });

  it("when a type, a take or a date window is given, then the list holds only what matches", async () => {
    const byType = await client().listDeliveries(streamId, { statuses: ["failed"], eventTypes: ["user.deleted"], take: 100 });
    expect(byType.deliveries.map((record) => record.id).sort()).toEqual(failedIds.slice(120).sort());
    expect(byType.next).toBeUndefined();

    const future = new Date(Date.now() + 3_600_000);
    const empty = await client().listDeliveries(streamId, { statuses: ["failed"], dateFrom: future });
    expect(empty.deliveries).toEqual([]);
    const past = await client().listDeliveries(streamId, { statuses: ["failed"], dateFrom: new Date(Date.now() - 3_600_000), dateTo: future, take: 100 });
    expect(past.deliveries).toHaveLength(100);
    expect(past.next).toEqual(expect.any(String));
  });

  it("when the window ends a millisecond after an event, inside its second, then the event is listed (the end is rounded up, not down)", async () => {
    const [last] = (await client().listDeliveries(streamId, { statuses: ["failed"], eventTypes: ["user.deleted"], take: 1 })).deliveries;
    const time = Date.parse(String(last!.event!.time));
    const page = await client().listDeliveries(streamId, { statuses: ["failed"], eventTypes: ["user.deleted"], dateFrom: new Date(time), dateTo: new Date(time + 1), take: 100 });
    expect(page.deliveries.map((record) => record.id)).toContain(last!.id);
    expect(tenantDateBefore(new Date("2025-09-08T06:35:17.001Z"))).toBe("2025-09-08T06:35:18Z");
    expect(tenantDateBefore(new Date("2025-09-08T06:35:17.000Z"))).toBe("2025-09-08T06:35:17Z");
  });

  it("when a date has fractional seconds or is longer than 20 characters, then 400; a whole-second date is accepted", async () => {
    const list = (query: string) => call(emulator, "GET", `/api/v2/event-streams/${streamId}/deliveries?${query}`, { token });
    const now = new Date();
    expect(await list(`date_from=${now.toISOString()}`)).toMatchObject({ status: 400, body: { message: expect.stringContaining("date_from") } });
    expect(await list(`date_to=${encodeURIComponent("2025-09-08T06:35:17+00:00")}`)).toMatchObject({ status: 400, body: { message: expect.stringContaining("date_to") } });
    expect(await list(`date_from=${tenantDate(now)}`)).toMatchObject({ status: 200 });
    expect(tenantDate(new Date("2025-09-08T06:35:17.999Z"))).toBe("2025-09-08T06:35:17Z");
    expect(await list("take=101")).toMatchObject({ status: 400, body: { message: expect.stringContaining("take") } });
    expect(await list("from=bm9wZQ")).toMatchObject({ status: 400, body: { message: expect.stringContaining("from") } });
  });

  it("when the stream is unknown or the client is not global, then 404 or 401", async () => {
    await expect(client().listDeliveries("est_1111111111111111111111")).rejects.toBeInstanceOf(TenantNotFoundError);
    await control(emulator, "/clients", { client_id: "local-client", client_secret: "local-secret", scopes: ["read:event_deliveries"], global: false });
    const local = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "local-client", clientSecret: "local-secret" });
    await expect(local.listDeliveries(streamId)).rejects.toBeInstanceOf(TenantUnauthorizedError);
  });
});

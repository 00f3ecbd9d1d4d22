import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tenantId, userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { adminHeaders } from "../helpers/credentials.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";

const adminToken = "admin-token-for-poison-tests";

/** `{"a":{"a":...{"a":1}...}}`, `depth` objects deep, as JSON text. */
function deepJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

// With the archive on, as the service starts by default: its outbox entry and payload are
// written for every shape too.
describe("ingress: any shape the parser accepts is stored, delivered and archived", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let service: TestService;
  const delivered = (id: string) => sink.requests.filter((request) => request.headers["webhook-id"] === encodeURIComponentIfNeeded(id));
  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    service = await startTestService({ DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken, ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url });
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await db?.drop();
  });

  it("when a valid event nests its data 5,000 deep, then it is answered 202 and delivered with its JSON text unchanged", async () => {
    const event = userEvent();
    const { data: _data, ...envelope } = event;
    const text = `${JSON.stringify(envelope).slice(0, -1)},"data":${deepJson(5000)}}`;
    const res = await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", text);
    expect(res.status, await res.clone().text()).toBe(202);
    expect(await res.json()).toEqual({ accepted: 1, duplicates: 0 });
    const [received] = await sink.until(() => delivered(event.id).length > 0, 20_000).then(() => delivered(event.id));
    expect(received!.body).toBe(text);

    // Archived, and a replay of its window sends the same text again.
    await expect.poll(async () => (await db.query("SELECT id FROM events WHERE id = $1 AND payload IS NOT NULL", [event.id])).length).toBe(1);
    const since = new Date(Date.now() - 60_000).toISOString();
    const started = await fetch(`${service.adminUrl}/admin/replays`, { method: "POST", headers: { ...adminHeaders(adminToken), "content-type": "application/json" }, body: JSON.stringify({ route: "default", since, type: event.type }) });
    expect(started.status, await started.clone().text()).toBe(202);
    await sink.until(() => delivered(event.id).length === 2, 60_000);
    expect(delivered(event.id)[1]!.body).toBe(text);
  });

  it("when a batch holds a deep event between two plain ones, then all three are delivered", async () => {
    const plain = [userEvent(), userEvent()];
    const deepId = tenantId("evt");
    const deep = `{"id":"${deepId}","source":"urn:test","specversion":"1.0","type":"user.created","data":${deepJson(6000)}}`;
    const body = `[${JSON.stringify(plain[0])},${deep},${JSON.stringify(plain[1])}]`;
    const res = await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", body, { "content-type": "application/cloudevents-batch+json" });
    expect(res.status).toBe(202);
    await sink.until(() => [plain[0]!.id, deepId, plain[1]!.id].every((id) => delivered(id).length === 1), 20_000);
    expect(delivered(deepId)[0]!.body).toBe(deep);
  });

  it("when an id holds a lone surrogate, then it is refused 400 naming id, and nothing is delivered", async () => {
    for (const id of ["evt_\ud800_1", "evt_\udfff_1", "\udc00evt"]) {
      const res = await service.post("/webhooks", JSON.stringify(userEvent({ id })));
      expect(res.status).toBe(400);
      const problem = (await res.json()) as { detail: string };
      expect(problem.detail).toMatch(/^id must be well-formed Unicode/);
    }
  });

  it("when two ids differ only where one had a lone surrogate, then the well-formed one is stored as new and delivered", async () => {
    const suffix = randomBytes(4).toString("hex");
    expect((await service.post("/webhooks", JSON.stringify(userEvent({ id: `evt_\udfff_${suffix}` })))).status).toBe(400);
    const valid = userEvent({ id: `evt_\ufffd_${suffix}` });
    const res = await service.post("/webhooks", JSON.stringify(valid));
    expect(await res.json()).toEqual({ accepted: 1, duplicates: 0 });
    await sink.until(() => delivered(valid.id).length === 1, 20_000);
  });

  it("when an id is shaped like the hashed job id of another, then both are accepted and both delivered once, each under its own job", async () => {
    const suffix = randomBytes(4).toString("hex");
    const first = userEvent({ id: `evt:collide:${suffix}` });
    const second = userEvent({ id: `h-${createHash("sha256").update(first.id).digest("hex").slice(0, 40)}` });
    const third = userEvent({ id: `${first.id.replace(/:/g, "_")}-replay-${suffix}` });
    for (const event of [first, second, third]) {
      const res = await service.post("/webhooks", JSON.stringify(event));
      expect(await res.json()).toEqual({ accepted: 1, duplicates: 0 });
    }
    await sink.until(() => [first, second, third].every((event) => delivered(event.id).length === 1), 20_000);
    for (const event of [first, second, third]) {
      const res = await fetch(`${service.adminUrl}/admin/events/${encodeURIComponent(event.id)}`, { headers: adminHeaders(adminToken) });
      const description = (await res.json()) as { routes: Array<{ state: string; attempts: number }> };
      expect(description.routes).toMatchObject([{ state: "delivered", attempts: 1 }]);
    }
  });

  it("when binary-mode data is not UTF-8, then it is delivered as data_base64, byte for byte", async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
    const id = tenantId("evt");
    const res = await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", bytes as unknown as string, {
      "content-type": "application/octet-stream",
      "ce-specversion": "1.0",
      "ce-id": id,
      "ce-source": "urn:test",
      "ce-type": "user.updated",
    });
    expect(res.status).toBe(202);
    await sink.until(() => delivered(id).length === 1, 20_000);
    const sent = JSON.parse(delivered(id)[0]!.body) as { data?: unknown; data_base64?: string; datacontenttype?: string };
    expect(sent.data).toBeUndefined();
    expect(sent.datacontenttype).toBe("application/octet-stream");
    expect(Buffer.from(sent.data_base64!, "base64").equals(bytes)).toBe(true);
  });

  it("when binary-mode data is UTF-8 text, then it is still delivered as data", async () => {
    const id = tenantId("evt");
    const res = await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", "héllo ✓", {
      "content-type": "text/plain",
      "ce-specversion": "1.0",
      "ce-id": id,
      "ce-source": "urn:test",
      "ce-type": "user.updated",
    });
    expect(res.status).toBe(202);
    await sink.until(() => delivered(id).length === 1, 20_000);
    expect(JSON.parse(delivered(id)[0]!.body)).toMatchObject({ data: "héllo ✓" });
  });
});

/** The webhook-id header as the dispatcher sends it (create-delivery-processor.ts). */
function encodeURIComponentIfNeeded(id: string): string {
  return /^[\x21-\x7e]+$/.test(id) ? id : encodeURIComponent(id);
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { adminHeaders } from "../helpers/credentials.js";

const adminToken = "admin-token-for-tests";

describe("service: receive then dispatch", () => {
  let sink: SinkServer;
  let service: TestService;
  beforeAll(async () => {
    sink = await startSinkServer();
    service = await startTestService({ DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken });
  });
  afterAll(async () => {
    await service.close();
    await sink.close();
  });

  it("when an event is posted, then the route receives it as a structured CloudEvent and the admin API shows it delivered", async () => {
    const event = userEvent();
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    const [request] = await sink.until((requests) => requests.some((r) => r.headers["webhook-id"] === event.id));
    const received = sink.requests.find((r) => r.headers["webhook-id"] === event.id) ?? request!;
    expect(received.headers["content-type"]).toMatch(/^application\/cloudevents\+json/);
    expect(received.headers["x-streamkeeper-origin"]).toBe("webhook");
    expect(JSON.parse(received.body)).toEqual(event);

    const deadline = Date.now() + 30_000;
    let description: { arrival?: object; routes?: Array<{ route: string; state: string }> } = {};
    while (Date.now() < deadline) {
      const res = await fetch(`${service.adminUrl}/admin/events/${event.id}`, { headers: adminHeaders(adminToken) });
      description = (await res.json()) as typeof description;
      if (description.routes?.[0]?.state === "delivered") break;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(description, JSON.stringify(description)).toMatchObject({ arrival: { origin: "webhook", streamId: "est_38ANnv8pQhqsZrX2VFbftv" }, routes: [{ route: "default", state: "delivered", attempts: 1 }] });
  });

  it("when the admin API is called without the token, then it answers 401, and an unknown event 404", async () => {
    expect((await fetch(`${service.adminUrl}/admin/events/evt_x`)).status).toBe(401);
    const res = await fetch(`${service.adminUrl}/admin/events/evt_unknown`, { headers: adminHeaders(adminToken) });
    expect(res.status).toBe(404);
  });

  it("when /metrics is asked of the public port, then it is not there", async () => {
    expect((await fetch(`${service.publicUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`${service.adminUrl}/metrics`)).status).toBe(200);
  });
});

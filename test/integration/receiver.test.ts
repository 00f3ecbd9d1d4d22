import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HTTP, CloudEvent as SdkEvent } from "cloudevents";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { basicAuthorization, webhookAuthorization } from "../helpers/credentials.js";

const unreachableSink = { DOWNSTREAM_URL: "http://127.0.0.1:9/" };

describe("receiver: content modes", () => {
  let service: TestService;
  let store: Awaited<ReturnType<typeof inspectStore>>;
  beforeAll(async () => {
    service = await startTestService(unreachableSink, "receiver");
    store = await inspectStore(service.config);
  });
  afterAll(async () => {
    await store.close();
    await service.close();
  });

  it("when a structured event arrives as application/json, then it is stored as received and answered 202", async () => {
    const event = userEvent();
    const res = await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: 1, duplicates: 0 });
    const job = await store.queues.forRoute("default").getJob(event.id);
    expect(job?.data.event).toEqual(event);
    expect(job?.data.streamId).toBe("est_38ANnv8pQhqsZrX2VFbftv");
    expect(await store.ledger.get(event.id)).toMatchObject({ origin: "webhook", type: "user.updated" });
  });

  it.each([
    "application/cloudevents+json",
    "application/cloudevents+json;charset=UTF-8",
    "Application/JSON; charset=utf-8",
  ])("when the content type is %s, then the event is stored", async (contentType) => {
    const event = userEvent();
    const res = await service.post("/webhooks", JSON.stringify(event), { "content-type": contentType });
    expect(res.status).toBe(202);
    expect(await store.queuedIds()).toContain(event.id);
  });

  it("when the event names no stream in the path, then a0stream is its stream", async () => {
    const event = userEvent({ a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" });
    await service.post("/webhooks", JSON.stringify(event));
    expect((await store.ledger.get(event.id))?.streamId).toBe("est_aD5AUDqZbHFcMoEx2LxAk9");
  });

  it("when a binary-mode event is sent by the CloudEvents SDK, then its attributes and data are stored", async () => {
    const sent = new SdkEvent({ id: "evt_binary00000000000000001", source: "urn:auth0:acme", type: "user.created", data: { object: { user_id: "auth0|1" } }, a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" });
    const message = HTTP.binary(sent);
    const res = await service.post("/webhooks", message.body as string, message.headers as Record<string, string>);
    expect(res.status).toBe(202);
    const job = await store.queues.forRoute("default").getJob(sent.id);
    expect(job?.data.event).toMatchObject({ id: sent.id, type: "user.created", source: "urn:auth0:acme", data: { object: { user_id: "auth0|1" } }, a0stream: "est_aD5AUDqZbHFcMoEx2LxAk9" });
  });

  it("when a batch is sent, then every event is stored and the answer counts them", async () => {
    const events = [userEvent(), userEvent({ type: "organization.created" }), userEvent()];
    const res = await service.post("/webhooks", JSON.stringify(events), { "content-type": "application/cloudevents-batch+json" });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: 3, duplicates: 0 });
    const ids = await store.queuedIds();
    for (const event of events) expect(ids).toContain(event.id);
  });

  it("when data is a JSON string, then it is kept as a string", async () => {
    const event = userEvent({ data: JSON.stringify({ object: { user_id: "auth0|2" } }) });
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    expect((await store.queues.forRoute("default").getJob(event.id))?.data.event.data).toBe(event.data);
  });

  it("when an event breaks the tenant's rules but not CloudEvents', then it is still stored and counted", async () => {
    const event = userEvent({ id: "short-id", type: "custom.thing" });
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    expect(await store.queuedIds()).toContain("short-id");
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/streamkeeper_events_nonconforming_total\{rule="id_length"\} [1-9]/);
    expect(metrics).toMatch(/streamkeeper_events_nonconforming_total\{rule="event_type"\} [1-9]/);
  });

  it("when an id arrives twice, then the second is answered 202 as a duplicate and queued once", async () => {
    const event = userEvent();
    await service.post("/webhooks", JSON.stringify(event));
    const res = await service.post("/webhooks", JSON.stringify({ ...event, time: new Date().toISOString() }));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: 0, duplicates: 1 });
    const jobs = await store.queues.forRoute("default").getJobs(["wait"]);
    expect(jobs.filter((job) => job.data.event.id === event.id)).toHaveLength(1);
    expect((await store.ledger.get(event.id))?.duplicates).toBe(1);
  });
});

describe("receiver: bad input never loses the good events around it", () => {
  let service: TestService;
  let store: Awaited<ReturnType<typeof inspectStore>>;
  beforeAll(async () => {
    service = await startTestService({ ...unreachableSink, WEBHOOK_MAX_BODY_BYTES: "4096" }, "receiver");
    store = await inspectStore(service.config);
  });
  afterAll(async () => {
    await store.close();
    await service.close();
  });

  const valid = () => JSON.stringify(userEvent());
  const without = (field: string) => {
    const event: Record<string, unknown> = userEvent();
    delete event[field];
    return JSON.stringify(event);
  };
  const matrix: Array<[string, () => Promise<Response>, number, RegExp]> = [
    ["no credentials", () => fetch(`${service.publicUrl}/webhooks`, { method: "POST", body: valid(), headers: { "content-type": "application/json" } }), 401, /Authorization header is missing/],
    ["a wrong password", () => service.post("/webhooks", valid(), { authorization: basicAuthorization(testCredentials.username, "nope") }), 401, /credentials are wrong/],
    ["a bearer token where basic is expected", () => service.post("/webhooks", valid(), { authorization: "Bearer abc" }), 401, /Basic scheme/],
    ["malformed JSON", () => service.post("/webhooks", '{"id": "evt_', {}), 400, /not valid JSON/],
    ["an empty body", () => service.post("/webhooks", "", {}), 400, /body is empty/],
    ["a JSON array in structured mode", () => service.post("/webhooks", "[]"), 400, /must be a JSON object/],
    ["no id", () => service.post("/webhooks", without("id")), 400, /^id is required/],
    ["no source", () => service.post("/webhooks", without("source")), 400, /^source is required/],
    ["no type", () => service.post("/webhooks", without("type")), 400, /^type is required/],
    ["no specversion", () => service.post("/webhooks", without("specversion")), 400, /^specversion is required/],
    ["specversion 0.3", () => service.post("/webhooks", JSON.stringify(userEvent({ specversion: "0.3" as "1.0" }))), 400, /^specversion must be "1.0"/],
    ["a numeric id", () => service.post("/webhooks", JSON.stringify({ ...userEvent(), id: 42 })), 400, /^id /],
    ["a bad time", () => service.post("/webhooks", JSON.stringify(userEvent({ time: "yesterday" }))), 400, /^time must be an RFC 3339 timestamp/],
    ["text/plain", () => service.post("/webhooks", valid(), { "content-type": "text/plain" }), 415, /content type "text\/plain"/],
    ["no content type", () => fetch(`${service.publicUrl}/webhooks`, { method: "POST", body: new Blob([valid()]), headers: { authorization: webhookAuthorization } }), 415, /content type missing/],
    ["a body over WEBHOOK_MAX_BODY_BYTES", () => service.post("/webhooks", JSON.stringify(userEvent({ data: { blob: "x".repeat(5000) } }))), 413, /larger than 4096 bytes/],
    ["a batch with one bad event", () => service.post("/webhooks", JSON.stringify([userEvent(), { ...userEvent(), type: "" }]), { "content-type": "application/cloudevents-batch+json" }), 400, /^events\[1\]\.type must be a non-empty string/],
    ["an empty batch", () => service.post("/webhooks", "[]", { "content-type": "application/cloudevents-batch+json" }), 400, /batch is empty/],
  ];

  it.each(matrix)("when a request has %s, then it is refused with its status and a detail naming the problem, and valid events around it are stored", async (_name, send, status, detail) => {
    const before = userEvent();
    const after = userEvent();
    expect((await service.post("/webhooks", JSON.stringify(before))).status).toBe(202);
    const res = await send();
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const problem = (await res.json()) as { status: number; detail: string };
    expect(problem.status).toBe(status);
    expect(problem.detail).toMatch(detail);
    if (status === 401) expect(res.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    expect((await service.post("/webhooks", JSON.stringify(after))).status).toBe(202);
    const ids = await store.queuedIds();
    expect(ids).toContain(before.id);
    expect(ids).toContain(after.id);
  });

  it("when a batch has one bad event, then the batch is refused with 400 naming the problem and none of its events is stored or queued", async () => {
    const good = userEvent();
    const res = await service.post("/webhooks", JSON.stringify([good, { ...userEvent(), source: "" }]), { "content-type": "application/cloudevents-batch+json" });
    // Refused as a whole, in words that say which element: the tenant does not retry a 400.
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/source/);
    expect(await store.ledger.has(good.id)).toBe(false);
    expect(await store.queuedIds()).not.toContain(good.id);
  });
});

describe("receiver: authentication modes", () => {
  const event = () => JSON.stringify(userEvent());
  const cases: Array<[string, Record<string, string>, Record<string, string>, Record<string, string>, string | null]> = [
    ["bearer", { WEBHOOK_AUTH: "bearer", WEBHOOK_TOKEN: "tok-123" }, { authorization: "Bearer tok-123" }, { authorization: "Bearer tok-124" }, "Bearer realm="],
    ["custom_header", { WEBHOOK_AUTH: "custom_header", WEBHOOK_HEADER_NAME: "X-Tenant-Key", WEBHOOK_HEADER_VALUE: "k3y" }, { "x-tenant-key": "k3y" }, { "x-tenant-key": "k3y-wrong" }, null],
    ["none", { WEBHOOK_AUTH: "none" }, {}, { authorization: "" }, null],
  ];

  it.each(cases)("when WEBHOOK_AUTH=%s, then the right credential is accepted and a wrong one refused", async (_mode, env, good, bad, challenge) => {
    const service = await startTestService({ ...env, ...unreachableSink }, "receiver");
    try {
      const send = (headers: Record<string, string>) =>
        fetch(`${service.publicUrl}/webhooks`, { method: "POST", body: event(), headers: { "content-type": "application/json", ...headers } });
      expect((await send(good)).status).toBe(202);
      const refused = await send(bad);
      if (env.WEBHOOK_AUTH === "none") return expect(refused.status).toBe(202);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toEqual(challenge === null ? null : expect.stringMatching(challenge));
    } finally {
      await service.close();
    }
  });
});

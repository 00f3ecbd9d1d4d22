import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { basicAuthorization, testCredentials } from "../helpers/credentials.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

/**
 * CONTRACT.md: which of two sources wins when both are given. Each case gives both, with
 * different values, so a swapped order fails here.
 */
describe("contract: the stream of an event (Public ingress)", () => {
  let service: TestService;
  let store: Awaited<ReturnType<typeof inspectStore>>;
  const pathStream = "est_PathPathPathPathPathPath1";
  const eventStream = "est_EventEventEventEventEven1";
  const defaultStream = "est_DefaultDefaultDefaultDef1";
  beforeAll(async () => {
    service = await startTestService({ DEFAULT_STREAM_ID: defaultStream }, "receiver");
    store = await inspectStore(service.config);
  });
  afterAll(async () => {
    await store?.close();
    await service?.close();
  });
  const streamOf = async (path: string, event: ReturnType<typeof userEvent>) => {
    expect((await service.post(path, JSON.stringify(event))).status).toBe(202);
    return (await store.ledger.get(event.id))?.streamId;
  };

  // Shown failing by hand: src/http/receiver-app.ts streamOf with a0stream before the path id.
  it("when the path names a stream and the event's a0stream another, then the path's wins", async () => {
    expect(await streamOf(`/webhooks/${pathStream}`, userEvent({ a0stream: eventStream }))).toBe(pathStream);
  });

  // Shown failing by hand: DEFAULT_STREAM_ID before a0stream.
  it("when no path id is given, then a0stream wins over DEFAULT_STREAM_ID", async () => {
    expect(await streamOf("/webhooks", userEvent({ a0stream: eventStream }))).toBe(eventStream);
  });

  it("when neither the path nor the event names one, then DEFAULT_STREAM_ID is the stream", async () => {
    const event = userEvent();
    delete event.a0stream;
    expect(await streamOf("/webhooks", event)).toBe(defaultStream);
  });
});

describe("contract: webhook credentials set in the environment and generated in DATA_DIR (Settings)", () => {
  let dataDir: string;
  let service: TestService | undefined;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-precedence-"));
  });
  afterAll(async () => {
    await service?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  // Shown failing by hand: src/credentials/webhook-credentials.ts resolveWebhookAuth reading the file before the configured credentials.
  it("when WEBHOOK_USERNAME/WEBHOOK_PASSWORD are set and DATA_DIR holds generated credentials, then the environment's are the ones accepted", async () => {
    await writeFile(join(dataDir, "webhook-credentials.json"), JSON.stringify({ username: "streamkeeper", password: "generated-before" }), { mode: 0o600 });
    service = await startTestService({ DATA_DIR: dataDir }, "receiver");
    const send = (authorization: string) =>
      fetch(`${service!.publicUrl}/webhooks/est_38ANnv8pQhqsZrX2VFbftv`, { method: "POST", body: JSON.stringify(userEvent()), headers: { "content-type": "application/json", authorization } }).then((answer) => answer.status);
    expect(await send(basicAuthorization(testCredentials.username, testCredentials.password))).toBe(202);
    expect(await send(basicAuthorization("streamkeeper", "generated-before"))).toBe(401);
  });
});

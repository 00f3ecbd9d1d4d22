import { ManagementError } from "auth0";
import { EventStreamsClient } from "auth0/eventStreams";
import { TokenExchangeProfilesClient } from "auth0/tokenExchangeProfiles";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, emit, getToken, settled, startSink, type Sink } from "./emulator-test-kit.js";

/**
 * The official `auth0` SDK, which nobody here wrote, runs the four operations of
 * docs/tenant.md against the emulator: what the emulator says, a real client accepts.
 */
describe("emulator with the official auth0 SDK", () => {
  let emulator: Emulator;
  let streams: EventStreamsClient;
  let profiles: TokenExchangeProfilesClient;
  let failing: Sink;

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.01 });
    failing = await startSink(() => 503);
    const token = await getToken(emulator);
    const options = { baseUrl: emulator.apiBaseUrl, token, maxRetries: 0 };
    streams = new EventStreamsClient(options);
    profiles = new TokenExchangeProfilesClient(options);
  });
  afterAll(async () => {
    await emulator.close();
    await failing.close();
  });

  it("when the SDK lists streams page by page, then it follows `next` through every stream", async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push(await createStream(emulator, "https://hooks.example.com/sdk", { name: `sdk-${i}` }));
    const page = await streams.list({ take: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.hasNextPage()).toBe(true);
    const seen: string[] = [];
    for await (const stream of page) seen.push(stream.id!);
    expect(seen).toEqual(created);
  });

  it("when the SDK updates a stream, then it gets the full stream back with the change", async () => {
    const id = await createStream(emulator, "https://hooks.example.com/sdk");
    const updated = await streams.update(id, {
      name: "updated by the SDK",
      status: "disabled",
      subscriptions: [{ event_type: "user.updated" }, { event_type: "user.deleted" }],
    });
    expect(updated).toMatchObject({ id, name: "updated by the SDK", status: "disabled", subscriptions: [{ event_type: "user.updated" }, { event_type: "user.deleted" }] });
    expect(updated).toHaveProperty("destination.configuration.webhook_endpoint", "https://hooks.example.com/sdk");
    expect(await streams.get(id)).toMatchObject({ name: "updated by the SDK", status: "disabled" });
  });

  it("when the SDK reads the delivery history of a failed event, then it gets the attempts and the event", async () => {
    const id = await createStream(emulator, failing.url, { types: ["organization.member.added"] });
    const eventId = await emit(emulator, "organization.member.added", { object: { user_id: "auth0|m1", organization_id: "org_1" } });
    await settled(emulator, eventId);

    const record = await streams.deliveries.getHistory(id, eventId);
    expect(record).toMatchObject({ id: eventId, event_stream_id: id, event_type: "organization.member.added", status: "failed" });
    expect(record.attempts).toHaveLength(4);
    expect(record.attempts.every((attempt) => attempt.status === "failed" && attempt.error_message === "HTTP 503")).toBe(true);
    expect(record.event).toMatchObject({ id: eventId, type: "organization.member.added", specversion: "1.0", data: { object: { user_id: "auth0|m1" } } });
  });

  it("when the SDK asks for the history of an unknown event, then it raises a 404 ManagementError", async () => {
    const id = await createStream(emulator, failing.url);
    const error = await streams.deliveries.getHistory(id, "evt_1111111111111111111111").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ManagementError);
    expect(error).toMatchObject({ statusCode: 404, body: { statusCode: 404, error: "Not Found" } });
  });

  it("when the SDK deletes a token exchange profile, then it resolves and the profile is gone", async () => {
    const { id } = (await call(emulator, "POST", "/emulator/token-exchange-profiles")).body as { id: string };
    await expect(profiles.delete(id)).resolves.toBeUndefined();
    await expect(profiles.delete(id)).resolves.toBeUndefined();
    const { ids } = (await call(emulator, "GET", "/emulator/token-exchange-profiles")).body as { ids: string[] };
    expect(ids).not.toContain(id);
  });
});

import { SignJWT, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, createStream, emit, getToken, settled, startSink, type Sink } from "./emulator-test-kit.js";

const unknownStream = "est_1111111111111111111111";
const unknownEvent = "evt_1111111111111111111111";
const webhook = (endpoint: string) => ({
  type: "webhook",
  configuration: { webhook_endpoint: endpoint, webhook_authorization: { method: "basic", username: "tenant", password: "pw-secret" } },
});

describe("emulator API", () => {
  let emulator: Emulator;
  let token: string;
  let failing: Sink;

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.01 });
    token = await getToken(emulator);
    failing = await startSink(() => 503);
  });
  afterAll(async () => {
    await emulator.close();
    await failing.close();
  });

  async function addClient(clientId: string, scopes: string[], global: boolean): Promise<string> {
    const answer = await call(emulator, "POST", "/emulator/clients", { body: { client_id: clientId, client_secret: `${clientId}-secret`, scopes, global } });
    expect(answer.status).toBe(201);
    return getToken(emulator, clientId, `${clientId}-secret`);
  }

  describe("POST /oauth/token", () => {
    it("when a client asks with JSON, then it gets an RS256 JWT with the real claims, verifiable with the JWKS", async () => {
      const answer = await call(emulator, "POST", "/oauth/token/", {
        body: { grant_type: "client_credentials", client_id: "emulator-client", client_secret: "emulator-secret", audience: emulator.audience },
      });
      expect(answer.status).toBe(200);
      const body = answer.body as { access_token: string; token_type: string; expires_in: number; scope: string };
      expect(body).toMatchObject({ token_type: "Bearer", expires_in: 86400 });
      expect(body.scope.split(" ")).toContain("read:event_deliveries");

      const claims = decodeJwt(body.access_token);
      expect(claims).toMatchObject({ iss: `${emulator.url}/`, sub: "emulator-client@clients", aud: emulator.audience, azp: "emulator-client", gty: "client-credentials", scope: body.scope });
      expect(claims.exp! - claims.iat!).toBe(86400);
      expect(decodeProtectedHeader(body.access_token)).toMatchObject({ alg: "RS256", kid: expect.any(String) });
      const keys = createRemoteJWKSet(new URL(`${emulator.url}/.well-known/jwks.json`));
      await expect(jwtVerify(body.access_token, keys, { issuer: `${emulator.url}/`, audience: emulator.audience })).resolves.toBeTruthy();
    });

    it("when the secret, the audience or the grant is wrong, then it answers Auth0's OAuth errors", async () => {
      const ask = (fields: Record<string, string>) =>
        call(emulator, "POST", "/oauth/token", {
          body: new URLSearchParams({ grant_type: "client_credentials", client_id: "emulator-client", client_secret: "emulator-secret", audience: emulator.audience, ...fields }).toString(),
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
        });
      expect(await ask({ client_secret: "nope" })).toMatchObject({ status: 401, body: { error: "access_denied", error_description: expect.any(String) } });
      expect(await ask({ audience: "https://elsewhere/api/v2/" })).toMatchObject({ status: 403, body: { error: "access_denied" } });
      expect(await ask({ grant_type: "password" })).toMatchObject({ status: 400, body: { error: "unsupported_grant_type" } });
      expect(await ask({ client_id: "" })).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    });
  });

  describe("authentication and rate limits", () => {
    it("when the bearer token is missing, garbled or signed by another key, then 401 in the real error shape", async () => {
      expect(await call(emulator, "GET", "/api/v2/event-streams")).toMatchObject({ status: 401, body: { statusCode: 401, error: "Unauthorized", message: "Invalid token" } });
      expect((await call(emulator, "GET", "/api/v2/event-streams", { token: "not.a.jwt" })).status).toBe(401);

      const { privateKey } = await generateKeyPair("RS256");
      const forged = await new SignJWT({ azp: "emulator-client", scope: "read:event_streams", gty: "client-credentials" })
        .setProtectedHeader({ alg: "RS256", kid: decodeProtectedHeader(token).kid! })
        .setIssuer(`${emulator.url}/`)
        .setSubject("emulator-client@clients")
        .setAudience(emulator.audience)
        .setIssuedAt()
        .setExpirationTime("1h")
        .sign(privateKey);
      expect(await call(emulator, "GET", "/api/v2/event-streams", { token: forged })).toMatchObject({ status: 401, body: { statusCode: 401, message: "Invalid signature." } });
    });

    it("when a token comes from another emulator, then its audience and signature are refused", async () => {
      const other = await startEmulator();
      try {
        expect((await call(emulator, "GET", "/api/v2/event-streams", { token: await getToken(other) })).status).toBe(401);
      } finally {
        await other.close();
      }
    });

    it("when the tenant's bucket is spent, then 429 with the three X-RateLimit headers and Retry-After, for every client of the tenant", async () => {
      // A bucket of 2 refilled one request per 10 s: no stall of this machine refills it between the calls.
      const limited = await startEmulator({ rateLimit: 0.1, rateLimitSize: 2 });
      try {
        const limitedToken = await getToken(limited);
        await call(limited, "POST", "/emulator/clients", { body: { client_id: "other", client_secret: "other-secret", scopes: ["read:event_streams"] } });
        const otherToken = await getToken(limited, "other", "other-secret");
        const list = (t: string) => call(limited, "GET", "/api/v2/event-streams", { token: t });
        const first = await list(limitedToken);
        expect(first.status).toBe(200);
        expect(first.headers.get("x-ratelimit-limit")).toBe("2");
        expect(first.headers.get("x-ratelimit-remaining")).toBe("1");
        await list(limitedToken);
        const refused = await list(limitedToken);
        expect(refused.status).toBe(429);
        expect(refused.body).toEqual({ statusCode: 429, error: "Too Many Requests", message: "Global limit has been reached", errorCode: "too_many_requests" });
        expect(refused.headers.get("x-ratelimit-limit")).toBe("2");
        expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
        expect(Number(refused.headers.get("x-ratelimit-reset"))).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

        // The bucket is the tenant's, not the client's (docs/tenant.md#rate-limits): another client spends from it too.
        const calls = await call(limited, "GET", "/emulator/calls");
        expect((calls.body as { callers: Array<{ caller: string; accepted: number; refused: number }> }).callers).toEqual([
          expect.objectContaining({ caller: "client:emulator-client", accepted: 2, refused: 1 }),
        ]);
        const other = await list(otherToken);
        if (other.status === 200) expect(other.headers.get("x-ratelimit-remaining")).toBe("0");
        else expect(other.status).toBe(429);
      } finally {
        await limited.close();
      }
    });

    it("when no rate limit is set, then the X-RateLimit headers are still sent", async () => {
      const answer = await call(emulator, "GET", "/api/v2/event-streams", { token });
      for (const header of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) expect(answer.headers.get(header)).toMatch(/^\d+$/);
    });
  });

  describe("GET /event-streams", () => {
    it("when streams span several pages, then `next` walks them in creation order and is absent on the last page", async () => {
      const fresh = await startEmulator();
      try {
        const freshToken = await getToken(fresh);
        const created: string[] = [];
        for (let i = 0; i < 5; i++) created.push(await createStream(fresh, "https://hooks.example.com/w", { name: `s${i}` }));
        const seen: string[] = [];
        const pages: number[] = [];
        let from: string | undefined;
        do {
          const answer = await call(fresh, "GET", `/api/v2/event-streams?take=2${from ? `&from=${encodeURIComponent(from)}` : ""}`, { token: freshToken });
          expect(answer.status).toBe(200);
          const body = answer.body as { eventStreams: { id: string }[]; next?: string };
          pages.push(body.eventStreams.length);
          seen.push(...body.eventStreams.map((s) => s.id));
          from = body.next;
        } while (from);
        expect(pages).toEqual([2, 2, 1]);
        expect(seen).toEqual(created);
        const all = (await call(fresh, "GET", "/api/v2/event-streams", { token: freshToken })).body as { eventStreams: unknown[]; next?: string };
        expect(all.eventStreams).toHaveLength(5);
        expect(all).not.toHaveProperty("next");
      } finally {
        await fresh.close();
      }
    });

    it("when take or from is out of range or garbled, then 400 naming the parameter", async () => {
      for (const query of ["take=0", "take=101", "take=abc"]) {
        const answer = await call(emulator, "GET", `/api/v2/event-streams?${query}`, { token });
        expect(answer).toMatchObject({ status: 400, body: { statusCode: 400, error: "Bad Request", message: expect.stringContaining("take") } });
      }
      expect(await call(emulator, "GET", "/api/v2/event-streams?from=garbage", { token })).toMatchObject({ status: 400, body: { message: expect.stringContaining("from") } });
    });

    it("when the client lacks read:event_streams, then 403 naming it", async () => {
      const weak = await addClient("no-read", ["update:event_streams"], true);
      expect(await call(emulator, "GET", "/api/v2/event-streams", { token: weak })).toMatchObject({
        status: 403,
        body: { statusCode: 403, error: "Forbidden", message: "Insufficient scope; expected any of: read:event_streams.", errorCode: "insufficient_scope" },
      });
    });
  });

  describe("POST and GET /event-streams/{id}", () => {
    it("when a stream is created, then 201 without its secret, and GET answers it; bad bodies and ids get 400, unknown ids 404", async () => {
      const created = await call(emulator, "POST", "/api/v2/event-streams", {
        token,
        body: { name: "mine", subscriptions: [{ event_type: "user.created" }], destination: webhook("https://hooks.example.com/x") },
      });
      expect(created.status).toBe(201);
      const stream = created.body as { id: string; status: string };
      expect(stream.id).toMatch(/^est_[1-9A-HJ-NP-Za-km-z]{22}$/);
      expect(stream.status).toBe("enabled");
      expect(JSON.stringify(created.body)).not.toContain("pw-secret");
      expect(await call(emulator, "GET", `/api/v2/event-streams/${stream.id}`, { token })).toMatchObject({ status: 200, body: created.body as object });

      const badEndpoint = await call(emulator, "POST", "/api/v2/event-streams", { token, body: { name: "x", subscriptions: [{ event_type: "user.created" }], destination: webhook("http://example.com/x") } });
      expect(badEndpoint).toMatchObject({ status: 400, body: { message: expect.stringContaining("webhook_endpoint") } });
      const badType = await call(emulator, "POST", "/api/v2/event-streams", { token, body: { name: "x", subscriptions: [{ event_type: "user.exploded" }], destination: webhook("https://h.example/x") } });
      expect(badType.status).toBe(400);
      expect(await call(emulator, "GET", "/api/v2/event-streams/est_short", { token })).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^Path validation error: .*26.* on property id/) } });
      expect(await call(emulator, "GET", `/api/v2/event-streams/${unknownStream}`, { token })).toMatchObject({ status: 404, body: { statusCode: 404, error: "Not Found", message: "The requested stream does not exist." } });
    });

    it("when the client lacks create:event_streams, then 403", async () => {
      const weak = await addClient("no-create", ["read:event_streams"], true);
      const answer = await call(emulator, "POST", "/api/v2/event-streams", { token: weak, body: { name: "x", subscriptions: [{ event_type: "user.created" }], destination: webhook("https://h.example/x") } });
      expect(answer).toMatchObject({ status: 403, body: { message: "Insufficient scope; expected any of: create:event_streams." } });
    });
  });

  describe("PATCH /event-streams/{id}", () => {
    let streamId: string;
    beforeAll(async () => {
      streamId = await createStream(emulator, "https://hooks.example.com/a", { auth: { method: "bearer", token: "old-token" } });
    });
    const patch = (body: unknown, t = token, id = streamId) => call(emulator, "PATCH", `/api/v2/event-streams/${id}`, { token: t, body });

    it("when fields are patched as JSON, then 200 with the full stream, untouched fields kept, updated_at bumped", async () => {
      const before = (await call(emulator, "GET", `/api/v2/event-streams/${streamId}`, { token })).body as { updated_at: string; subscriptions: unknown };
      const answer = await patch({ name: "renamed" });
      expect(answer.status).toBe(200);
      const after = answer.body as { name: string; updated_at: string; subscriptions: unknown; created_at: string; status: string; destination: unknown };
      expect(after).toMatchObject({ id: streamId, name: "renamed", subscriptions: before.subscriptions, status: "enabled" });
      expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    });

    it("when the body is form-encoded, then nested fields apply and the new secret is stored but never returned", async () => {
      const form = new URLSearchParams({
        status: "disabled",
        "destination[type]": "webhook",
        "destination[configuration][webhook_endpoint]": "https://hooks.example.com/b",
        "destination[configuration][webhook_authorization][method]": "custom_header",
        "destination[configuration][webhook_authorization][header_key]": "X-Key",
        "destination[configuration][webhook_authorization][header_value]": "new-value",
      });
      const formAnswer = await call(emulator, "PATCH", `/api/v2/event-streams/${streamId}`, { token, body: form.toString(), headers: { "Content-Type": "application/x-www-form-urlencoded" } });
      expect(formAnswer.status).toBe(200);
      expect(formAnswer.body).toMatchObject({
        status: "disabled",
        destination: { type: "webhook", configuration: { webhook_endpoint: "https://hooks.example.com/b", webhook_authorization: { method: "custom_header", header_key: "X-Key" } } },
      });
      expect(JSON.stringify(formAnswer.body)).not.toContain("new-value");
      const full = await call(emulator, "GET", `/emulator/streams/${streamId}`);
      expect(full.body).toMatchObject({ destination: { configuration: { webhook_authorization: { header_value: "new-value" } } } });
      expect((await patch({ status: "enabled" })).status).toBe(200);
    });

    it("when the body breaks a rule, then 400 naming the property", async () => {
      expect(await patch({ name: "x", foo: 1 })).toMatchObject({ status: 400, body: { message: expect.stringContaining("foo") } });
      expect(await patch({ name: "n".repeat(129) })).toMatchObject({ status: 400, body: { message: expect.stringContaining("name") } });
      expect(await patch({ status: "paused" })).toMatchObject({ status: 400, body: { message: expect.stringContaining("status") } });
      expect(await patch({ subscriptions: [] })).toMatchObject({ status: 400, body: { message: expect.stringContaining("subscriptions") } });
      expect(await patch({ destination: { type: "webhook", configuration: { webhook_endpoint: "https://h.example/x" } } })).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("webhook_authorization") },
      });
      expect(await patch({ destination: { type: "webhook", configuration: { webhook_endpoint: "https://h.example/x", webhook_authorization: { method: "basic", username: "u" } } } })).toMatchObject({
        status: 400,
        body: { message: expect.stringContaining("password") },
      });
      const garbled = await call(emulator, "PATCH", `/api/v2/event-streams/${streamId}`, { token, body: "{not json", headers: { "Content-Type": "application/json" } });
      expect(garbled).toMatchObject({ status: 400, body: { statusCode: 400, message: "Invalid request payload JSON format" } });
    });

    it("when the id is malformed, unknown, or the scope is missing, then 400, 404, 403", async () => {
      expect(await patch({ name: "x" }, token, "abc")).toMatchObject({ status: 400, body: { message: expect.stringContaining("String is too short (3 chars), requires 26") } });
      expect(await patch({ name: "x" }, token, unknownStream)).toMatchObject({ status: 404, body: { message: "The requested stream does not exist." } });
      const weak = await addClient("no-update", ["read:event_streams"], true);
      expect(await patch({ name: "x" }, weak)).toMatchObject({ status: 403, body: { message: "Insufficient scope; expected any of: update:event_streams." } });
    });
  });

  describe("GET /event-streams/{id}/deliveries/{event_id}", () => {
    let streamId: string;
    let eventId: string;
    beforeAll(async () => {
      streamId = await createStream(emulator, failing.url, { types: ["organization.updated"] });
      eventId = await emit(emulator, "organization.updated");
      await settled(emulator, eventId);
    });
    const get = (t: string, id = streamId, event = eventId) => call(emulator, "GET", `/api/v2/event-streams/${id}/deliveries/${event}`, { token: t });

    it("when the event failed, then 200 with the record; the list and redelivery operations see it too", async () => {
      expect(await get(token)).toMatchObject({ status: 200, body: { id: eventId, status: "failed" } });
      const list = await call(emulator, "GET", `/api/v2/event-streams/${streamId}/deliveries?statuses=failed&take=10`, { token });
      expect(list).toMatchObject({ status: 200, body: { deliveries: [expect.objectContaining({ id: eventId, status: "failed" })] } });
      expect(list.body).not.toHaveProperty("next");
      expect((await call(emulator, "POST", `/api/v2/event-streams/${streamId}/redeliver`, { token, body: { statuses: ["failed"] } })).status).toBe(202);
      expect(await get(token)).toMatchObject({ status: 200, body: { status: "pending" } });
      expect((await call(emulator, "POST", `/api/v2/event-streams/${streamId}/redeliver/${eventId}`, { token })).status).toBe(409);
      await settled(emulator, eventId);
      const record = (await get(token)).body as { status: string; attempts: { status: string }[] };
      expect(record.status).toBe("failed");
      expect(record.attempts.map((a) => a.status)).toEqual(["failed", "failed", "failed", "failed", "retrying", "failed", "failed", "failed", "failed"]);
    });

    it("when ids are malformed or unknown, then 400 or 404", async () => {
      expect(await get(token, streamId, "evt_short")).toMatchObject({ status: 400, body: { message: expect.stringContaining("event_id") } });
      expect(await get(token, "x", eventId)).toMatchObject({ status: 400, body: { message: expect.stringContaining("on property id") } });
      expect(await get(token, unknownStream)).toMatchObject({ status: 404, body: { message: "The requested stream does not exist." } });
      expect(await get(token, streamId, unknownEvent)).toMatchObject({ status: 404, body: { statusCode: 404 } });
      expect((await call(emulator, "POST", `/api/v2/event-streams/${streamId}/redeliver/${unknownEvent}`, { token })).status).toBe(404);
    });

    it("when the client is not global, then 401; when it lacks read:event_deliveries, then 403 naming it", async () => {
      const local = await addClient("not-global", ["read:event_deliveries"], false);
      expect(await get(local)).toMatchObject({ status: 401, body: { statusCode: 401, error: "Unauthorized" } });
      const unscoped = await addClient("no-deliveries", ["read:event_streams"], true);
      expect(await get(unscoped)).toMatchObject({
        status: 403,
        body: { statusCode: 403, error: "Forbidden", message: "Insufficient scope; expected any of: read:event_deliveries.", errorCode: "insufficient_scope" },
      });
    });
  });

  describe("DELETE /token-exchange-profiles/{id}", () => {
    it("when a profile is deleted, then 204 with no body, again 204 once it is gone", async () => {
      const created = await call(emulator, "POST", "/emulator/token-exchange-profiles");
      const id = (created.body as { id: string }).id;
      expect(id).toMatch(/^tep_[1-9A-HJ-NP-Za-km-z]{16}$/);
      const ids = async () => ((await call(emulator, "GET", "/emulator/token-exchange-profiles")).body as { ids: string[] }).ids;
      expect((await ids()).length).toBeGreaterThanOrEqual(4);

      const first = await call(emulator, "DELETE", `/api/v2/token-exchange-profiles/${id}`, { token });
      expect(first.status).toBe(204);
      expect(first.body).toBeUndefined();
      expect(await ids()).not.toContain(id);
      expect((await call(emulator, "DELETE", `/api/v2/token-exchange-profiles/${id}`, { token })).status).toBe(204);
    });

    it("when the client lacks delete:token_exchange_profiles, then 403; without a token, 401", async () => {
      const weak = await addClient("no-delete", ["read:token_exchange_profiles"], true);
      expect(await call(emulator, "DELETE", "/api/v2/token-exchange-profiles/tep_J6in0iklGxk77b4h", { token: weak })).toMatchObject({
        status: 403,
        body: { message: "Insufficient scope; expected any of: delete:token_exchange_profiles." },
      });
      expect((await call(emulator, "DELETE", "/api/v2/token-exchange-profiles/tep_J6in0iklGxk77b4h")).status).toBe(401);
    });
  });

  describe("control API", () => {
    it("when an event type is unknown or a client id is taken, then 400 or 409", async () => {
      expect((await call(emulator, "POST", "/emulator/events", { body: { type: "user.exploded", data: {} } })).status).toBe(400);
      const body = { client_id: "twice", client_secret: "s", scopes: [] };
      expect((await call(emulator, "POST", "/emulator/clients", { body })).status).toBe(201);
      expect((await call(emulator, "POST", "/emulator/clients", { body })).status).toBe(409);
    });
  });
});

import { describe, expect, inject, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startFreezingProxy } from "../helpers/start-freezing-proxy.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";


/**
 * README: the receiver "answers `202` only once it is stored (`503`, never a 4xx, when it
 * cannot store)". A Redis that hangs (connected, answering nothing: a stuck server, a
 * network path that keeps its TCP session) cannot store either: 503 with Retry-After, so
 * the tenant retries, instead of a request held open; once Redis answers, 202 again.
 */
describe("receiver: a hung Redis", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when Redis stops answering without closing its connection, then a webhook gets 503 with Retry-After (not a hang), readiness fails, and 202 comes back once Redis answers", async () => {
    const target = new URL(inject("redisUrl"));
    const proxy = await startFreezingProxy({ host: target.hostname, port: Number(target.port) });
    cleanup.push(() => proxy.close());
    const service = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/", REDIS_URL: proxy.url }, "receiver");
    cleanup.push(() => service.close());
    // A hang would show as no answer at all: give up well past the service's own store timeout.
    const post = (body: string) => fetch(`${service.publicUrl}/webhooks`, { method: "POST", body, headers: { authorization, "content-type": "application/json" }, signal: AbortSignal.timeout(30_000) });

    const before = userEvent();
    expect((await post(JSON.stringify(before))).status).toBe(202);

    proxy.freeze();
    const during = userEvent();
    const refused = await post(JSON.stringify(during));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/could not be stored/);
    expect((await fetch(`${service.publicUrl}/readyz`, { signal: AbortSignal.timeout(30_000) })).status).toBe(503);

    proxy.thaw();
    const after = userEvent();
    await expect.poll(async () => (await post(JSON.stringify(after))).status).toBe(202);
    await expect.poll(async () => (await fetch(`${service.publicUrl}/readyz`)).status).toBe(200);

    const store = await inspectStore(service.config, inject("redisUrl"));
    cleanup.push(() => store.close());
    const queued = await store.queuedIds();
    expect(queued).toContain(before.id);
    expect(queued).toContain(after.id);
  });
});

import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bullPrefix, reconcileQueueBullPrefix } from "../../src/queue/queue-names.js";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startRedisCluster, type RedisClusterHandle } from "../helpers/redis-cluster.js";
import { startSinkServer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { createStream, emit, settled } from "./emulator-test-kit.js";
import { adminHeaders } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";

const adminToken = "cluster-admin-token";

/**
 * The whole path on a three-master Redis Cluster: the tenant (emulator) pushes events to
 * the receiver, the worker delivers them to a downstream once, and events whose push
 * failed are recovered by reconcile from the tenant's delivery history.
 */
describe("end to end on a three-master Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  let emulator: Emulator;
  let sink: SinkServer;
  let service: TestService;
  let liveStream: string;
  let brokenStream: string;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    emulator = await startEmulator({ timeScale: 0.01 });
    sink = await startSinkServer();
    // A prefix whose reconcile queue and shared tag sit on different masters, as most do.
    let prefix = `test-${randomUUID()}`;
    while ((await cluster.nodeOf(bullPrefix(prefix))) === (await cluster.nodeOf(reconcileQueueBullPrefix(prefix)))) prefix = `test-${randomUUID()}`;
    service = await startTestService(
      {
        REDIS_URL: cluster.url,
        QUEUE_PREFIX: prefix,
        DOWNSTREAM_URL: sink.url,
        MGMT_API_BASE_URL: emulator.apiBaseUrl,
        MGMT_TOKEN_URL: emulator.tokenUrl,
        MGMT_AUDIENCE: emulator.audience,
        MGMT_CLIENT_ID: "emulator-client",
        MGMT_CLIENT_SECRET: "emulator-secret",
        ADMIN_TOKEN: adminToken,
        RECONCILE_RATE_PER_SECOND: "200",
      },
      "all",
    );
    const endpoint = `${service.publicUrl}/webhooks`;
    liveStream = await createStream(emulator, endpoint, { types: ["user.created"], auth: { method: "basic", ...testCredentials } });
    // Pushes of this stream fail (401): its events are only recovered by reconcile.
    brokenStream = await createStream(emulator, endpoint, { types: ["user.deleted"], auth: { method: "basic", username: testCredentials.username, password: "wrong" } });
  });

  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await emulator?.close();
    await cluster?.stop();
  });

  const webhookIds = (requests: SinkRequest[]) => requests.map((request) => String(request.headers["webhook-id"]));

  /** Waits until no delivery job is waiting, active or delayed: nothing more will reach the sink. */
  async function untilQueuesDrained() {
    const store = await inspectStore(service.config, cluster.url);
    try {
      let counts: Record<string, number> = {};
      await until(
        "no delivery job pending",
        async () => Object.values((counts = await store.queues.forRoute("default").getJobCounts("waiting", "active", "delayed", "prioritized"))).every((count) => count === 0),
        { withinMs: 45_000, everyMs: 50, detail: () => JSON.stringify(counts) },
      );
      return;
    } finally {
      await store.close();
    }
  }

  it("when the tenant pushes events and more are posted, some twice, then the downstream gets each event exactly once", async () => {
    const started = Date.now();
    const pushed = await Promise.all(Array.from({ length: 50 }, (_, index) => emit(emulator, "user.created", { object: { user_id: `auth0|${index}` } })));
    const posted = Array.from({ length: 30 }, () => userEvent());
    for (const event of posted) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    for (const event of posted.slice(0, 10)) {
      expect(await (await service.post("/webhooks", JSON.stringify(event))).json()).toEqual({ accepted: 0, duplicates: 1 });
    }

    const expected = [...pushed, ...posted.map((event) => event.id)];
    await sink.until((requests) => new Set(webhookIds(requests)).size >= expected.length, 30_000);
    await untilQueuesDrained();
    const ids = webhookIds(sink.requests);
    expect(ids.slice().sort()).toEqual(expected.slice().sort()); // each once, none missing
    for (const id of pushed) expect((await settled(emulator, id)).status).toBe("succeeded");
    // On a cluster a delivery's mark goes apart from its job's completion (mark-at-completion.ts): each is recorded all the same.
    const store = await inspectStore(service.config, cluster.url);
    try {
      for (const event of posted) await expect.poll(async () => (await store.ledger.get(event.id))?.deliveredAt.default).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
    console.info(`cluster: ${expected.length} events, ${ids.length - new Set(ids).size} duplicate deliveries, ${Date.now() - started} ms`);
  });

  it("when pushes failed, then reconcile on the cluster recovers each event once, and a second reconcile finds them received", async () => {
    const failed = await Promise.all(Array.from({ length: 10 }, () => emit(emulator, "user.deleted")));
    for (const id of failed) expect((await settled(emulator, id)).status).toBe("failed");
    const known = webhookIds(sink.requests)[0]!;
    const unknown = "evt_0000000000000000000000";

    const outcomes = await reconcile([...failed, known, unknown], brokenStream);
    expect(outcomes.get(known)).toBe("already_received");
    expect(outcomes.get(unknown)).toBe("not_found");
    for (const id of failed) expect(outcomes.get(id), id).toBe("recovered");

    await sink.until((requests) => failed.every((id) => webhookIds(requests).includes(id)), 45_000);
    const again = await reconcile(failed, brokenStream);
    for (const id of failed) expect(again.get(id)).toBe("already_received");
    await untilQueuesDrained();

    const recovered = sink.requests.filter((request) => failed.includes(String(request.headers["webhook-id"])));
    expect(recovered).toHaveLength(failed.length);
    for (const request of recovered) expect(request.headers["x-streamkeeper-origin"]).toBe("reconcile");
    expect(liveStream).not.toBe(brokenStream);
  });

  it("when reconcile has run, then the reconcile queue's keys sit in one slot of their own, off the shared tag's master, and the keys spread over every master", async () => {
    const prefix = service.config.env.QUEUE_PREFIX;
    const counts = await Promise.all(
      cluster.nodes.map(async (node) => {
        const redis = new Redis(node.port, "127.0.0.1", { maxRetriesPerRequest: 1 });
        try {
          const count = async (pattern: string) => (await redis.keys(pattern)).length;
          return {
            all: await count(`{${prefix}*`),
            shared: await count(`${bullPrefix(prefix)}*`),
            reconcile: await count(`${reconcileQueueBullPrefix(prefix)}*`),
            reconcileUnderShared: await count(`${bullPrefix(prefix)}:reconcile*`),
          };
        } finally {
          redis.disconnect();
        }
      }),
    );
    const reconcileNode = await cluster.nodeOf(reconcileQueueBullPrefix(prefix));
    expect(counts[reconcileNode]!.reconcile).toBeGreaterThan(10); // its jobs, id counter, events, meta
    expect(counts.filter((count) => count.reconcile > 0)).toHaveLength(1);
    expect(reconcileNode).not.toBe(await cluster.nodeOf(bullPrefix(prefix)));
    expect(counts.every((count) => count.reconcileUnderShared === 0)).toBe(true);
    expect(counts.every((count) => count.all > 0)).toBe(true);
    console.info(`cluster keys per master: ${counts.map((count, index) => `#${index} ${count.all} (shared tag ${count.shared}, reconcile queue ${count.reconcile})`).join("; ")}`);
  });

  /** POST /admin/reconcile, then polls each job to its outcome. */
  async function reconcile(eventIds: string[], streamId: string): Promise<Map<string, string>> {
    const headers = adminHeaders(adminToken, { "content-type": "application/json" });
    const answer = await fetch(`${service.adminUrl}/admin/reconcile`, { method: "POST", headers, body: JSON.stringify({ eventIds, streamId }) });
    expect(answer.status).toBe(202);
    const { jobs } = (await answer.json()) as { jobs: Array<{ eventId: string; jobId: string }> };
    const outcomes = new Map<string, string>();
    const deadline = Date.now() + 45_000;
    for (const job of jobs) {
      for (;;) {
        const state = (await (await fetch(`${service.adminUrl}/admin/reconcile/${job.jobId}`, { headers })).json()) as { state: string; outcome: string | null };
        if (state.outcome !== null) {
          outcomes.set(job.eventId, state.outcome);
          break;
        }
        if (Date.now() > deadline) throw new Error(`reconcile job ${job.jobId} (${job.eventId}) still ${state.state}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    return outcomes;
  }
});

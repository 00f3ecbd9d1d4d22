import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createReplayRunner } from "../../src/archive/replay-runner.js";
import { createReplays } from "../../src/archive/replays.js";
import { writeArchiveBatch } from "../../src/archive/write-archive-batch.js";
import { createRouteChooser } from "../../src/routes/route-chooser.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createArchiveDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

/**
 * A replay goes through its route as defined when it runs (README.md, "Routes that choose
 * and shape"): a filter added since the events arrived narrows what the replay sends, and
 * what it leaves out is counted `filtered` in the replay's status; the transform of now
 * shapes what it sends.
 */
describe("routes that choose and shape: replay through the route as it is now", () => {
  let db: ArchiveDatabase;
  let harness: DispatchHarness | undefined;
  let sink: SinkServer | undefined;
  let runner: ReturnType<typeof createReplayRunner> | undefined;

  beforeAll(async () => void (db = await createArchiveDatabase(4)));
  afterAll(async () => {
    await runner?.close();
    await harness?.close();
    await sink?.close();
    await db?.drop();
  });

  it("when a route's filter changed since its events were archived, then a replay sends only what the filter selects now, counts the rest filtered, and sends the transformed body", async () => {
    const stream = `est_${randomUUID().replaceAll("-", "")}`;
    const start = Date.now() - 3_600_000;
    const plans = ["free", "pro", "free", "team", "pro", "free"];
    const events = plans.map((plan) => {
      const event = userEvent({ a0stream: stream });
      (event.data as { object: Record<string, unknown> }).object.app_metadata = { plan };
      return event;
    });
    // Archived with no filter on the route: every event was delivered then.
    await writeArchiveBatch(db.pool, events.map((event, index) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt: start + index * 1000, routes: ["crm"] })));

    sink = await startSinkServer();
    const crm = testRoute("crm", sink.url, { concurrency: 1, filter: { "data.object.app_metadata.plan": { $in: ["pro", "team"] } }, transform: '{"id": id, "plan": data.object.app_metadata.plan}' });
    harness = await createDispatchHarness(redisUrl, [crm]);
    harness.startDispatcher();
    const chooser = createRouteChooser([crm]);
    runner = createReplayRunner({ pool: db.pool, queues: harness.queues, logger: capturedLogger("info").logger, pollMs: 600_000, pageSize: 4, selects: (route, event) => chooser.choose(route, event)?.deliver ?? true });
    const replays = createReplays({ pool: db.pool, routes: ["crm"], retentionDays: 30 });
    const { replayId } = await replays.start({ route: "crm", since: start, stream });
    runner.wake();

    await expect.poll(() => replays.get(replayId!)).toMatchObject({ state: "done", matched: 6, sent: 3, filtered: 3 });
    await sink.until((requests) => requests.length === 3);
    const paying = events.filter((_, index) => plans[index] !== "free");
    expect(sink.requests.map((request) => JSON.parse(request.body))).toEqual(paying.map((event, index) => ({ id: event.id, plan: ["pro", "team", "pro"][index] })));
    expect(sink.requests.map((request) => request.headers["x-streamkeeper-origin"])).toEqual(["replay", "replay", "replay"]);
  });
});

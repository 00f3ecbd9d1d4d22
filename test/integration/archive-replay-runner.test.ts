import { randomUUID } from "node:crypto";
import { createServer, type AddressInfo } from "node:net";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { forgetEntity } from "../../src/archive/forget-entity.js";
import { createReplayRunner } from "../../src/archive/replay-runner.js";
import { createReplays } from "../../src/archive/replays.js";
import { writeArchiveBatch } from "../../src/archive/write-archive-batch.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { replayDeliveries, replaysRunning } from "../../src/metrics/archive-metrics.js";
import { capturedLogger, type CapturedLogger } from "../helpers/captured-logger.js";
import { createArchiveDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { watchRedisCommands } from "../helpers/watch-redis-commands.js";

const redisUrl = inject("redisUrl");
const pageSize = 4;

/**
 * README "The archive", replay, with the runner in this process (archive-replay.test.ts
 * runs it in service processes): a replay reads its window oldest first, a page at a
 * time after its checkpoint, and queues each event once on its route; a runner that
 * stops resumes from the checkpoint; erased payloads are skipped and counted; a cancel
 * stops the queueing; `rate` paces the pages. Real Postgres (the run's, a database of its
 * own) and real Redis queues, delivered by a dispatcher to a sink.
 */
describe("archive: the replay runner", () => {
  let db: ArchiveDatabase;
  let pool: pg.Pool;
  let harness: DispatchHarness | undefined;
  let sink: SinkServer | undefined;
  let runner: ReturnType<typeof createReplayRunner> | undefined;

  beforeAll(async () => void ({ pool } = db = await createArchiveDatabase(4)));
  afterAll(() => db?.drop());
  afterEach(async () => {
    await runner?.close();
    runner = undefined;
    await harness?.close();
    harness = undefined;
    await sink?.close();
    sink = undefined;
  });

  /** `count` events of a stream of their own archived one second apart, oldest first, from an hour ago. */
  const archived = async (count: number, make: (index: number) => CloudEvent = () => userEvent()) => {
    const stream = `est_${randomUUID().replaceAll("-", "")}`;
    const start = Date.now() - 3_600_000;
    const events = Array.from({ length: count }, (_, index) => ({ ...make(index), a0stream: stream }));
    // Written newest first: the order of the rows is not the order of a replay.
    await writeArchiveBatch(pool, events.map((event, index) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt: start + index * 1000, routes: [] })).reverse());
    return { stream, events, start };
  };
  /** A route of its own with a sink behind it (one delivery at a time: the sink sees the queue's order) and the replays of that route. */
  let route = "";
  const routeFor = async (name: string) => {
    route = name;
    sink = await startSinkServer();
    harness = await createDispatchHarness(redisUrl, [testRoute(name, sink.url, { concurrency: 1 })]);
    return createReplays({ pool, routes: [name], retentionDays: 30 });
  };
  // A long poll: a replay is found by the look at the runner's start or by wake(), as one started through the admin API is.
  const startRunner = (logs: CapturedLogger, on = pool) => (runner = createReplayRunner({ pool: on, queues: harness!.queues, logger: logs.logger, pollMs: 600_000, pageSize }));
  /** Another process's connections to the archive. */
  const otherPool = () => {
    const other = new pg.Pool({ connectionString: db.url, max: 2 });
    other.on("error", () => {});
    return other;
  };
  const running = async () => (await replaysRunning.get()).values[0]?.value ?? 0;
  const rowOf = async (replayId: string) =>
    (await db.query<{ state: string; sent: number; skipped: number; checkpoint_id: string | null; reason: string | null }>("SELECT state, sent, skipped, checkpoint_id, reason FROM replays WHERE id = $1", [replayId]))[0]!;
  /**
   * Waits for `check` to answer (anything but undefined, null or false) and returns that answer,
   * within expect.poll's limit: the suite's, or a mutation run's shorter one
   * (vitest.mutate.config.ts), so a mutant that loses an event fails here, not at Stryker's timeout.
   */
  const until = async <T>(what: string, check: () => T | Promise<T>): Promise<Exclude<T, undefined | null | false>> => {
    let answer: T | undefined;
    await expect.poll(async () => (answer = await check()), { message: what }).toSatisfy((value) => value !== undefined && value !== null && value !== false);
    return answer as Exclude<T, undefined | null | false>;
  };
  /** The replay reaches `state`; one that ended otherwise (failed, cancelled, done) fails at once, its row (and reason) in the message. */
  const stateIs = async (replayId: string, state: string) =>
    expect(await until(`the replay ${state}`, async () => ((row) => (row.state === state || ["done", "cancelled", "failed"].includes(row.state)) && row)(await rowOf(replayId)))).toMatchObject({ state });
  const received = (count: number) => until(`${count} requests at the sink`, () => sink!.requests.length >= count);
  const replayedIds = () => sink!.requests.map((request) => request.headers["webhook-id"] as string);
  /** Every job the route's queue holds, whatever its state (completed ones are kept). */
  const queuedCount = async () => {
    const counts = await harness!.queues.forRoute(route).getJobCounts();
    return Object.values(counts).reduce((sum, count) => sum + count, 0);
  };

  it("when a window is replayed, then its events go out oldest first, page after page, each once with origin replay, and nothing from before since, from until on, or of another type", async () => {
    const replays = await routeFor("in-order");
    const { stream, events, start } = await archived(13, (index) => userEvent({ type: index === 6 ? "user.created" : "user.updated" }));
    harness!.startDispatcher();
    const logs = capturedLogger("info");
    startRunner(logs);
    // The window: from the 2nd event (since) to the 12th (until, not in it), user.updated only.
    const { replayId } = await replays.start({ route: "in-order", since: start + 1000, until: start + 11_000, stream, type: "user.updated" });
    runner!.wake();
    await stateIs(replayId!, "done");
    const expected = events.slice(1, 11).filter((event) => event.type === "user.updated").map((event) => event.id);
    expect(expected).toHaveLength(9);
    await received(expected.length);
    expect(replayedIds()).toEqual(expected);
    for (const request of sink!.requests) expect(request.headers["x-streamkeeper-origin"]).toBe("replay");
    expect(await rowOf(replayId!)).toMatchObject({ sent: 9, skipped: 0, checkpoint_id: expected.at(-1) });
    expect(logs.lines.find((line) => line.replayId === replayId && line.msg === "replay queued every event of its window")).toMatchObject({ route: "in-order" });
    expect(await queuedCount()).toBe(9);
  });

  it("when older events of the window are still in the outbox (the archive behind), then the replay waits for them there instead of passing them by: every event sent once, in order, matched grown to what was sent", async () => {
    const replays = await routeFor("archive-behind");
    const stream = `est_${randomUUID().replaceAll("-", "")}`;
    const start = Date.now() - 3_600_000;
    const events = Array.from({ length: 6 }, () => ({ ...userEvent(), a0stream: stream }));
    const rows = events.map((event, index) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt: start + index * 1000, routes: [] }));
    // The 3rd and 4th are still in the outbox: the archive is complete through the 2nd only.
    await writeArchiveBatch(pool, [...rows.slice(0, 2), ...rows.slice(4)]);
    let through = start + 1500;
    harness!.startDispatcher();
    const logs = capturedLogger("info");
    runner = createReplayRunner({ pool, queues: harness!.queues, logger: logs.logger, pollMs: 600_000, pageSize, archivedThrough: async () => through });
    const { replayId, matched } = await replays.start({ route: "archive-behind", since: start, stream });
    expect(matched).toBe(4);
    runner.wake();
    await until("the replay waiting for the archive", () => logs.lines.some((line) => line.replayId === replayId && String(line.msg).startsWith("replay waits for the archive")));
    expect((await rowOf(replayId!)).state).toBe("running");
    // Its status says so, not only the log.
    const waiting = await replays.get(replayId!);
    expect(waiting).toMatchObject({ state: "running", sent: 2 });
    expect(Date.parse(waiting!.waitingForArchiveSince!)).toBeGreaterThan(Date.now() - 60_000);
    // What the archive held up to there went out before the wait.
    await received(2);
    expect(replayedIds()).toEqual(events.slice(0, 2).map((event) => event.id));
    // The writer catches up: the two land, older than what the replay has already read past.
    await writeArchiveBatch(pool, rows.slice(2, 4));
    through = Date.now();
    // Waiting, it let go of its connection and lock (the writer needs the pool): a later look takes it up.
    runner.wake();
    await stateIs(replayId!, "done");
    await received(6);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
    expect(await db.query("SELECT matched, sent FROM replays WHERE id = $1", [replayId])).toEqual([{ matched: 6, sent: 6 }]);
    expect((await replays.get(replayId!))?.waitingForArchiveSince).toBeUndefined();
  });

  it("when the archive is behind only after a replay's until, then the replay does not wait for it: its window is complete", async () => {
    const replays = await routeFor("window-complete");
    const { stream, events, start } = await archived(4);
    harness!.startDispatcher();
    const logs = capturedLogger("info");
    // The backlog starts half an hour ago; the window ended before it.
    runner = createReplayRunner({ pool, queues: harness!.queues, logger: logs.logger, pollMs: 600_000, pageSize, archivedThrough: async () => Date.now() - 1_800_000 });
    const { replayId } = await replays.start({ route: "window-complete", since: start, until: start + 4000, stream });
    runner.wake();
    await stateIs(replayId!, "done");
    await received(4);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
  });

  it("when a replay row was written before windows ended at the start (no until), then it ends at its creation: no event archived later is sent as part of it", async () => {
    const replays = await routeFor("old-row");
    const { stream, events, start } = await archived(4);
    harness!.startDispatcher();
    startRunner(capturedLogger("info"));
    const replayId = `rpl_${randomUUID().replaceAll("-", "")}`;
    // Created after the 2nd event arrived, as an earlier release wrote it: a filter without until.
    await db.query("INSERT INTO replays (id, route, filter, state, matched, created_at) VALUES ($1, 'old-row', $2, 'running', 2, $3)", [replayId, JSON.stringify({ since: new Date(start).toISOString(), stream }), new Date(start + 1500)]);
    runner!.wake();
    await stateIs(replayId, "done");
    await received(2);
    expect(replayedIds()).toEqual(events.slice(0, 2).map((event) => event.id));
    expect(await replays.get(replayId)).toMatchObject({ sent: 2 });
  });

  it("when a replay's until is still to come, then its window ends when it starts; a since still to come is refused saying so", async () => {
    const at = Date.now() - 60_000;
    const replays = createReplays({ pool, routes: ["later"], retentionDays: 30, now: () => at });
    const { replayId } = await replays.start({ route: "later", since: at - 3_600_000, until: at + 3_600_000 });
    expect((await replays.get(replayId!))?.until).toBe(new Date(at).toISOString());
    await expect(replays.start({ route: "later", since: at + 1000 })).rejects.toThrow(`since ${new Date(at + 1000).toISOString()} is not in the past: give a since before now`);
    await pool.query("UPDATE replays SET state = 'cancelled' WHERE id = $1", [replayId]);
  });

  it("when events share an arrival time across a page's end, then the next page goes on after the last one sent, by id, skipping none", async () => {
    const replays = await routeFor("same-time");
    const stream = `est_${randomUUID().replaceAll("-", "")}`;
    const at = Date.now() - 1_800_000;
    // Six events of one millisecond: their order is their ids'.
    const events = ["evt_f", "evt_a", "evt_d", "evt_b", "evt_e", "evt_c"].map((prefix) => ({ ...userEvent(), id: `${prefix}${randomUUID().replaceAll("-", "")}`, a0stream: stream }));
    await writeArchiveBatch(pool, events.map((event) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt: at, routes: [] })));
    harness!.startDispatcher();
    startRunner(capturedLogger("info"));
    const { replayId } = await replays.start({ route: "same-time", since: at - 1000, stream });
    runner!.wake();
    await stateIs(replayId!, "done");
    await received(6);
    expect(replayedIds()).toEqual(events.map((event) => event.id).sort());
  });

  it("when the runner stops after queuing a page and another one starts, then it resumes from the checkpoint: every event of the window is sent once, in order", async () => {
    const replays = await routeFor("resumed");
    const { stream, events, start } = await archived(10);
    const first = capturedLogger("info");
    startRunner(first);
    const { replayId } = await replays.start({ route: "resumed", since: start, stream });
    runner!.wake();
    // No dispatcher yet: the first page waits in the queue and the runner waits for it to drain.
    await until("the first page's checkpoint", async () => (await rowOf(replayId!)).checkpoint_id === events[pageSize - 1]!.id);
    expect(await running()).toBe(1);
    await runner!.close();
    expect(await running()).toBe(0);
    expect(await queuedCount()).toBe(pageSize);
    expect((await rowOf(replayId!)).state).toBe("running");

    // Another process takes it up: the first one let go of it.
    const second = capturedLogger("info");
    const elsewhere = otherPool();
    try {
      startRunner(second, elsewhere);
      harness!.startDispatcher();
      await stateIs(replayId!, "done");
      await runner!.close();
    } finally {
      await elsewhere.end();
    }
    await received(10);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
    expect(second.lines.find((line) => line.msg === "replay resumes from its checkpoint")).toMatchObject({ replayId, route: "resumed" });
    expect(await rowOf(replayId!)).toMatchObject({ sent: 10, checkpoint_id: events.at(-1)!.id });
    expect(await queuedCount()).toBe(10);
  });

  it("when a runner stopped between queuing a page and writing its checkpoint, then the next one queues that page again and each event is still sent once", async () => {
    const replays = await routeFor("requeued");
    const { stream, events, start } = await archived(10);
    startRunner(capturedLogger("info"));
    const { replayId } = await replays.start({ route: "requeued", since: start, stream });
    runner!.wake();
    await until("the first page's checkpoint", async () => (await rowOf(replayId!)).checkpoint_id === events[pageSize - 1]!.id);
    await runner!.close();
    // The checkpoint as it was before that page: the crash came before its write.
    await db.query("UPDATE replays SET checkpoint_at = NULL, checkpoint_id = NULL WHERE id = $1", [replayId]);

    startRunner(capturedLogger("info"));
    harness!.startDispatcher();
    await stateIs(replayId!, "done");
    await received(10);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
    expect(await queuedCount()).toBe(10);
  });

  it("when two processes' runners find the same replay, then one sends it: each event is queued and counted once", async () => {
    const replays = await routeFor("contended");
    const { stream, events, start } = await archived(10);
    const elsewhere = otherPool();
    try {
      const other = createReplayRunner({ pool: elsewhere, queues: harness!.queues, logger: capturedLogger("info").logger, pollMs: 600_000, pageSize });
      startRunner(capturedLogger("info"));
      harness!.startDispatcher();
      const { replayId } = await replays.start({ route: "contended", since: start, stream });
      runner!.wake();
      other.wake();
      await stateIs(replayId!, "done");
      await other.close();
      await received(10);
      expect(replayedIds()).toEqual(events.map((event) => event.id));
      expect(await rowOf(replayId!)).toMatchObject({ sent: 10 });
    } finally {
      await elsewhere.end();
    }
  });

  it("when some events of the window were erased, then they are skipped, never sent, and counted in the replay and its metric", async () => {
    const replays = await routeFor("erased");
    const forgotten = `auth0|${randomUUID().replaceAll("-", "")}`;
    const { stream, events, start } = await archived(9, (index) => (index % 2 === 1 && index < 6 ? userEvent({ data: { object: { user_id: forgotten } } }) : userEvent()));
    expect((await forgetEntity(pool, forgotten)).erased).toBe(3);
    const skippedBefore = (await replayDeliveries.get()).values.find((value) => value.labels.route === "erased" && value.labels.outcome === "skipped_erased")?.value ?? 0;
    harness!.startDispatcher();
    const logs = capturedLogger("info");
    startRunner(logs);
    const { replayId } = await replays.start({ route: "erased", since: start, stream });
    runner!.wake();
    await stateIs(replayId!, "done");
    const kept = events.filter((_, index) => !(index % 2 === 1 && index < 6)).map((event) => event.id);
    await received(kept.length);
    expect(replayedIds()).toEqual(kept);
    expect(await rowOf(replayId!)).toMatchObject({ sent: 6, skipped: 3 });
    const skippedAfter = (await replayDeliveries.get()).values.find((value) => value.labels.route === "erased" && value.labels.outcome === "skipped_erased")?.value ?? 0;
    expect(skippedAfter - skippedBefore).toBe(3);
    const said = logs.lines.filter((line) => line.replayId === replayId && line.msg === "replay: events whose payload was erased are skipped, never sent");
    // Pages of 4: the first holds 2 erased events, the second 1, the third none (and says nothing).
    expect(said.map((line) => line.skipped)).toEqual([2, 1]);
    expect(await queuedCount()).toBe(6);
  });

  it("when a replay is cancelled while its pages wait, then the runner queues no page after the cancel and says so", async () => {
    const replays = await routeFor("cancelled");
    const { stream, events, start } = await archived(16);
    const logs = capturedLogger("info");
    startRunner(logs);
    const { replayId } = await replays.start({ route: "cancelled", since: start, stream });
    runner!.wake();
    await until("the first page's checkpoint", async () => (await rowOf(replayId!)).checkpoint_id === events[pageSize - 1]!.id);
    expect(await replays.cancel(replayId!)).toBe(true);
    harness!.startDispatcher();
    await until("the runner's word on the cancel", async () => logs.lines.some((line) => line.replayId === replayId && line.msg === "replay cancelled: no further events are queued"));
    // The page queued before the cancel, and none after it: the one it was waiting to queue is not.
    await received(pageSize);
    await runner!.close();
    expect(replayedIds()).toEqual(events.slice(0, pageSize).map((event) => event.id));
    expect(await queuedCount()).toBe(pageSize);
    expect(await rowOf(replayId!)).toMatchObject({ state: "cancelled", sent: pageSize });
  });

  it("when a replay has a rate, then every event is still sent in order, and the replay takes at least as long as its pages at that rate", async () => {
    const replays = await routeFor("paced");
    const { stream, events, start } = await archived(12);
    harness!.startDispatcher();
    startRunner(capturedLogger("info"));
    const rate = 10;
    const began = Date.now();
    const { replayId } = await replays.start({ route: "paced", since: start, stream, rate });
    runner!.wake();
    await stateIs(replayId!, "done");
    const tookMs = Date.now() - began;
    await received(12);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
    // Three pages of 4 at 10 a second: the runner waits 400 ms after each. Load only makes it longer.
    expect(tookMs).toBeGreaterThanOrEqual((events.length / rate) * 1000 - 50);
  });

  it("when an archived payload cannot be read, then the replay fails saying why, and the runner goes on with other replays", async () => {
    const replays = await routeFor("unreadable");
    const { stream, events, start } = await archived(3);
    await db.query("UPDATE events SET payload = '\\x09'::bytea WHERE id = $1", [events[1]!.id]);
    harness!.startDispatcher();
    const logs = capturedLogger("info");
    startRunner(logs);
    const { replayId } = await replays.start({ route: "unreadable", since: start, stream });
    runner!.wake();
    await stateIs(replayId!, "failed");
    expect((await rowOf(replayId!)).reason).toBe("archived payload has codec 9, which this version cannot read; upgrade Streamkeeper");
    expect(logs.lines.find((line) => line.replayId === replayId && line.level === 50)).toMatchObject({ msg: "replay failed; its state says so" });

    // The route is free again: a replay of the readable events runs to its end.
    await db.query("UPDATE events SET payload = NULL WHERE id = $1", [events[1]!.id]);
    const { replayId: again } = await replays.start({ route: "unreadable", since: start, stream });
    runner!.wake();
    await stateIs(again!, "done");
    expect(await rowOf(again!)).toMatchObject({ sent: 2, skipped: 1 });
  });

  it("when a replay without until has started, then events archived after its start are not sent: it sends what it matched", async () => {
    const replays = await routeFor("no-until");
    const { stream, events, start } = await archived(5);
    const started = await replays.start({ route: "no-until", since: start, stream });
    expect(started.matched).toBe(5);
    // Arriving once the replay has started: live events of the stream, not part of its window.
    const later = Array.from({ length: 3 }, () => ({ ...userEvent(), a0stream: stream }));
    await writeArchiveBatch(pool, later.map((event) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt: Date.now(), routes: [] })));
    harness!.startDispatcher();
    startRunner(capturedLogger("info"));
    runner!.wake();
    await stateIs(started.replayId!, "done");
    await received(5);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
    expect(await rowOf(started.replayId!)).toMatchObject({ sent: 5, checkpoint_id: events.at(-1)!.id });
    expect(await queuedCount()).toBe(5);
  });

  it("when a replayed event had been delivered to the route and its replay's first attempt fails, then the retry sends it again: the route's once-only record does not hold a replay back", async () => {
    const replays = await routeFor("again");
    const { stream, events, start } = await archived(3);
    harness!.startDispatcher();
    for (const event of events) await harness!.store.store(event, { origin: "webhook" });
    await received(3);
    await until("the live deliveries recorded", async () => (await Promise.all(events.map((event) => harness!.ledger.deliveredAt(event.id, "again")))).every((at) => at !== undefined));
    // The downstream fails each event's first replayed request.
    const failedOnce = new Set<string>();
    sink!.answer = (request) => {
      const id = request.headers["webhook-id"] as string;
      if (request.headers["x-streamkeeper-origin"] !== "replay" || failedOnce.has(id)) return {};
      failedOnce.add(id);
      return { status: 503 };
    };
    startRunner(capturedLogger("info"));
    const { replayId } = await replays.start({ route: "again", since: start, stream });
    runner!.wake();
    await stateIs(replayId!, "done");
    const replayed = (requests: SinkServer["requests"], id: string) => requests.filter((request) => request.headers["webhook-id"] === id && request.headers["x-streamkeeper-origin"] === "replay");
    // Each job finished (3 live, 3 replayed), sent or not: then every request it made has arrived.
    await until("every job finished", async () => (await harness!.queues.forRoute("again").getCompletedCount()) === 6);
    for (const event of events) expect(replayed(sink!.requests, event.id)).toHaveLength(2);
    await until("every request answered", () => sink!.requests.every((request) => request.status !== undefined));
    for (const event of events) expect(replayed(sink!.requests, event.id).map((request) => request.status)).toEqual([503, 200]);
  });

  it("when the service stops while a replay's checkpoint write waits and its connection is cut, then the replay is not failed: the next runner sends each event once", async () => {
    const replays = await routeFor("cut");
    const { stream, events, start } = await archived(8);
    const { replayId } = await replays.start({ route: "cut", since: start, stream });
    // Another session holds the replay's row: the checkpoint write after the first page waits for it.
    const holder = new pg.Client({ connectionString: db.url });
    holder.on("error", () => {});
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM replays WHERE id = $1 FOR UPDATE", [replayId]);
      const logs = capturedLogger("info");
      startRunner(logs);
      runner!.wake();
      const writer = await until("the checkpoint write waiting for the row", async () =>
        (await db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE replays SET sent%'"))[0]?.pid,
      );
      // Stopping (close), then the write's connection cut: it fails while the runner closes.
      const closed = runner!.close();
      await db.query("SELECT pg_terminate_backend($1)", [writer]);
      await holder.query("ROLLBACK");
      await closed;
      expect(await rowOf(replayId!)).toMatchObject({ state: "running", sent: 0, reason: null });
      expect(logs.lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
    } finally {
      await holder.end();
    }
    harness!.startDispatcher();
    startRunner(capturedLogger("info"));
    await stateIs(replayId!, "done");
    await received(8);
    expect(replayedIds()).toEqual(events.map((event) => event.id));
    expect(await queuedCount()).toBe(8);
  });

  it("when half a page or more of the replay waits on the route, then no further page is queued: the next one goes once fewer wait", async () => {
    const replays = await routeFor("bounded");
    const { stream, events, start } = await archived(2 * pageSize);
    // The downstream holds each request until the test answers it: one job in flight, the others waiting.
    const held: Array<() => void> = [];
    sink!.answer = () => new Promise((ok) => held.push(() => ok({})));
    // The runner's looks at the backlog as Redis runs them: BullMQ's count script asked for "prioritized" on this queue.
    const queueKey = `${harness!.queues.forRoute("bounded").qualifiedName}:`;
    let looks = 0;
    const watch = await watchRedisCommands(redisUrl, (args) => {
      if (args.includes(queueKey) && args.at(-1) === "prioritized") looks += 1;
    });
    try {
      harness!.startDispatcher();
      startRunner(capturedLogger("info"));
      const { replayId } = await replays.start({ route: "bounded", since: start, stream });
      runner!.wake();
      await received(1);
      held.shift()!();
      // The second job in flight: two (half a page) wait.
      await received(2);
      const before = looks;
      // Three looks after it: at least two saw the two waiting, and a page queued after one of them would be there by the next.
      await until("three more looks at the backlog", () => looks >= before + 3);
      expect(await queuedCount()).toBe(pageSize);
      held.shift()!();
      // The third in flight: one waits, fewer than half a page.
      await until("the second page queued", async () => (await queuedCount()) === 2 * pageSize);
      sink!.answer = () => ({});
      for (const release of held.splice(0)) release();
      await stateIs(replayId!, "done");
      await received(2 * pageSize);
      expect(replayedIds()).toEqual(events.map((event) => event.id));
    } finally {
      for (const release of held.splice(0)) release();
      watch.close();
    }
  });

  /** A pool of the runner's own, counting the connections given back to it (a look's query, a run's client). */
  const countedPool = (max: number) => {
    const counted = Object.assign(new pg.Pool({ connectionString: db.url, max }), { released: 0 });
    counted.on("error", () => {});
    counted.on("release", () => (counted.released += 1));
    return counted;
  };

  it("when a replay is started elsewhere and this runner is not woken, then its poll finds it and sends it", async () => {
    const replays = await routeFor("polled");
    const { stream, events, start } = await archived(3);
    harness!.startDispatcher();
    const own = countedPool(2);
    try {
      runner = createReplayRunner({ pool: own, queues: harness!.queues, logger: capturedLogger("info").logger, pollMs: 50, pageSize });
      // Its look at start has found nothing: the replay begins after it.
      await until("the runner's first look", () => own.released >= 1);
      const { replayId } = await replays.start({ route: "polled", since: start, stream });
      await stateIs(replayId!, "done");
      await received(3);
      expect(replayedIds()).toEqual(events.map((event) => event.id));
    } finally {
      await runner?.close();
      runner = undefined;
      await own.end();
    }
  });

  it("when Postgres cannot be reached, then the runner says so at debug level and keeps looking", async () => {
    await routeFor("away");
    const port = await new Promise<number>((ok) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => ok(free));
      });
    });
    const away = new pg.Pool({ connectionString: `postgres://streamkeeper@127.0.0.1:${port}/archive`, max: 1 });
    away.on("error", () => {});
    const logs = capturedLogger("debug");
    try {
      runner = createReplayRunner({ pool: away, queues: harness!.queues, logger: logs.logger, pollMs: 50, pageSize });
      const said = await until("two looks that could not reach Postgres", () => {
        const lines = logs.lines.filter((line) => line.msg === "replays could not be looked for (Postgres away); trying again");
        return lines.length >= 2 && lines;
      });
      for (const line of said) expect(line).toMatchObject({ level: 20, err: { code: "ECONNREFUSED" } });
    } finally {
      await runner?.close();
      runner = undefined;
      await away.end();
    }
  });

  it("when another process holds a replay at this runner's look, then a later look takes it up once the other has let go", async () => {
    const replays = await routeFor("handed-over");
    const { stream, events, start } = await archived(2 * pageSize);
    const elsewhere = otherPool();
    const own = countedPool(2);
    try {
      const other = createReplayRunner({ pool: elsewhere, queues: harness!.queues, logger: capturedLogger("info").logger, pollMs: 600_000, pageSize });
      const { replayId } = await replays.start({ route: "handed-over", since: start, stream });
      other.wake();
      // No dispatcher yet: the other process holds the replay, waiting for its first page to drain.
      await until("the first page's checkpoint", async () => (await rowOf(replayId!)).checkpoint_id === events[pageSize - 1]!.id);
      runner = createReplayRunner({ pool: own, queues: harness!.queues, logger: capturedLogger("info").logger, pollMs: 600_000, pageSize });
      // Its look at start, then its try at the replay (held elsewhere), each gave its connection back.
      await until("this runner's look and try", () => own.released >= 2);
      await other.close();
      harness!.startDispatcher();
      runner.wake();
      await stateIs(replayId!, "done");
      await received(2 * pageSize);
      expect(replayedIds()).toEqual(events.map((event) => event.id));
    } finally {
      await runner?.close();
      runner = undefined;
      await own.end();
      await elsewhere.end();
    }
  });

  it("when another process finishes a replay between this runner's look and its taking it, then the runner leaves it alone: nothing queued, nothing said", async () => {
    const replays = await routeFor("ended");
    const { stream, start } = await archived(3);
    const { replayId } = await replays.start({ route: "ended", since: start, stream });
    // One connection for the runner: the test takes it as the runner's look gives it back, so the runner's taking of the replay waits behind the test.
    const narrow = countedPool(1);
    try {
      const logs = capturedLogger("info");
      startRunner(logs, narrow);
      const between = await narrow.connect();
      await db.query("UPDATE replays SET state = 'done' WHERE id = $1", [replayId]);
      between.release();
      // Its look, the test's turn, then its try at the replay: each gave the one connection back.
      await until("the runner's try at the replay", () => narrow.released >= 3);
      await runner!.close();
      runner = undefined;
      expect(logs.lines.filter((line) => line.replayId === replayId)).toEqual([]);
      expect(await queuedCount()).toBe(0);
    } finally {
      await narrow.end();
    }
  });

  it("when the runner is woken again while it sends a replay, then it does not take the replay twice, and its stop waits for that replay to let go", async () => {
    const replays = await routeFor("woken-twice");
    const { stream, events, start } = await archived(2 * pageSize);
    const own = countedPool(2);
    try {
      startRunner(capturedLogger("info"), own);
      const { replayId } = await replays.start({ route: "woken-twice", since: start, stream });
      runner!.wake();
      // No dispatcher: the replay waits for its first page to drain, on a connection it holds.
      await until("the first page's checkpoint", async () => (await rowOf(replayId!)).checkpoint_id === events[pageSize - 1]!.id);
      const before = own.released;
      runner!.wake();
      await until("the second look", () => own.released > before);
      await runner!.close();
      runner = undefined;
      // Stopped: no connection held, no replay counted running, its lock free for another process.
      expect(own.totalCount - own.idleCount).toBe(0);
      expect(await running()).toBe(0);
      expect(await db.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")).toEqual([]);
    } finally {
      await own.end();
    }
  });

  it("when a replay is cancelled while a page of it is being queued, then the runner stops after that page and says so at once, the page still waiting", async () => {
    const replays = await routeFor("cancelled-mid-page");
    const { stream, events, start } = await archived(2 * pageSize);
    const { replayId } = await replays.start({ route: "cancelled-mid-page", since: start, stream });
    // The cancel's transaction (the same UPDATE as DELETE /admin/replays/:id) holds the row: the runner reads
    // "running" before its first page, queues it, and its checkpoint write waits for the cancel to commit.
    const canceller = new pg.Client({ connectionString: db.url });
    canceller.on("error", () => {});
    await canceller.connect();
    try {
      await canceller.query("BEGIN");
      await canceller.query("UPDATE replays SET state = 'cancelled', updated_at = now() WHERE id = $1 AND state = 'running'", [replayId]);
      const logs = capturedLogger("info");
      startRunner(logs);
      runner!.wake();
      await until("the checkpoint write waiting for the cancel", async () =>
        (await db.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE replays SET sent%'")).length > 0,
      );
      await canceller.query("COMMIT");
      // No dispatcher: the page stays queued, and the runner has no room to wait for before saying it.
      await until("the runner's word on the cancel", () => logs.lines.some((line) => line.replayId === replayId && line.msg === "replay cancelled: no further events are queued"));
      expect(await queuedCount()).toBe(pageSize);
      expect(await rowOf(replayId!)).toMatchObject({ state: "cancelled", sent: pageSize, checkpoint_id: events[pageSize - 1]!.id });
    } finally {
      await canceller.end();
    }
  });
});

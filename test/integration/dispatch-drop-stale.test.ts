import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { seededRandom, testSeed } from "../helpers/test-seed.js";
import { adminHeaders, webhookAuthorization as authorization } from "../helpers/credentials.js";
import { until as untilAnswer } from "../helpers/until.js";

/** The shuffle and the sink's hold times: seeded, so a failing order can be run again. */
const random = seededRandom(testSeed("dispatch-drop-stale"));

const adminToken = "drop-stale-admin";
const base = Date.parse("2026-01-01T00:00:00.000Z");

/** The state `version` of a user: `updated_at` (and `time`) move forward one second per version. */
function userState(userId: string, version: number, type = "user.updated"): CloudEvent {
  const at = new Date(base + version * 1000).toISOString();
  return userEvent({ type, time: at, data: { object: { user_id: userId, updated_at: at, version } } });
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/**
 * dropStale as deployed: one receiver and two worker processes on one Redis, a route
 * `fresh` with dropStale and a plain route `plain`, both for user events. The `fresh`
 * sink takes 5-25 ms per request, handles requests concurrently and records, per user,
 * the versions it finished handling (2xx only) in the order it finished them, and any
 * moment two states of one user were in its hands at once.
 */
describe("dropStale: a route never goes back in time for a user, across worker processes", () => {
  let dir: string;
  let fresh: SinkServer;
  let plain: SinkServer;
  let receiver: ServiceProcess;
  let workers: ServiceProcess[] = [];
  /** user → versions the fresh sink answered 2xx for, in the order it finished them */
  const finished = new Map<string, number[]>();
  /** users whose states overlapped at the fresh sink */
  const overlaps: string[] = [];
  const inHand = new Set<string>();
  /** event id → answer for its first attempts at the fresh sink (503 makes it retry); default 200 */
  const answers = new Map<string, () => number>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sk-drop-stale-"));
    fresh = await startSinkServer(async (request) => {
      const event = JSON.parse(request.body) as CloudEvent;
      const { user_id: user, version } = (event.data as { object: { user_id: string; version: number } }).object;
      if (inHand.has(user)) overlaps.push(`${user} v${version}`);
      inHand.add(user);
      await sleep(5 + random() * 20);
      inHand.delete(user);
      const status = answers.get(event.id)?.() ?? 200;
      if (status === 200) finished.set(user, [...(finished.get(user) ?? []), version]);
      return { status };
    });
    plain = await startSinkServer();
    const routesFile = join(dir, "routes.json");
    await writeFile(
      routesFile,
      JSON.stringify([
        { name: "fresh", match: "user.*", url: fresh.url, concurrency: 8, dropStale: true, timeoutMs: 5000 },
        { name: "plain", match: "user.*", url: plain.url, concurrency: 8 },
      ]),
    );
    const env = serviceProcessEnv({
      ROUTES_FILE: routesFile,
      DATA_DIR: dir,
      ADMIN_TOKEN: adminToken,
      LOG_LEVEL: "warn",
      SHUTDOWN_TIMEOUT_MS: "3000",
      DISPATCH_BACKOFF_BASE_MS: "20",
      DISPATCH_BACKOFF_MAX_MS: "200",
    });
    [receiver, ...workers] = await Promise.all([startServiceProcess("receiver", env), startServiceProcess("worker", env), startServiceProcess("worker", env)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([receiver, ...workers].filter(Boolean).map((process) => process.kill()));
    await fresh?.close();
    await plain?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Sends as the tenant does: a 503 (the store timed out, as it may on a loaded machine)
   * means not stored, so the event is sent again after its Retry-After; any other answer
   * but 202 fails the test.
   */
  async function post(event: CloudEvent) {
    for (let sent = 1; ; sent++) {
      const answer = await fetch(`${receiver.publicUrl}/webhooks`, { method: "POST", body: JSON.stringify(event), headers: { authorization, "content-type": "application/cloudevents+json" } });
      if (answer.status === 503 && sent < 10) {
        await sleep(Number(answer.headers.get("retry-after")) * 1000);
        continue;
      }
      expect(answer.status, receiver.output().slice(-2000)).toBe(202);
      return;
    }
  }

  /** `dispatch_total` of a route and outcome, summed over both workers. */
  async function dispatched(route: string, outcome: string): Promise<number> {
    const counts = await Promise.all(
      workers.map(async (worker) => {
        const text = await (await fetch(`${worker.adminUrl}/metrics`)).text();
        const line = text.split("\n").find((candidate) => candidate.startsWith("streamkeeper_dispatch_total{") && candidate.includes(`route="${route}"`) && candidate.includes(`outcome="${outcome}"`));
        return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  async function stateOf(eventId: string, route: string): Promise<string | undefined> {
    const answer = await fetch(`${receiver.adminUrl}/admin/events/${eventId}`, { headers: adminHeaders(adminToken) });
    if (answer.status !== 200) return undefined;
    const description = (await answer.json()) as { routes: Array<{ route: string; state: string }> };
    return description.routes.find((candidate) => candidate.route === route)?.state;
  }

  const until = (what: string, condition: () => Promise<boolean> | boolean) =>
    untilAnswer(what, condition, { withinMs: 60_000, everyMs: 50, detail: () => workers.map((worker) => worker.output().slice(-1500)).join("\n") });

  it("when 25 users × 8 versions arrive shuffled from 20 concurrent senders, some first answered 503, then each user's versions reach the fresh route in order, ending on the newest, and the plain route gets all 200", async () => {
    const users = Array.from({ length: 25 }, (_, index) => `auth0|shuffle${index}`);
    const events = users.flatMap((user) => Array.from({ length: 8 }, (_, index) => userState(user, index + 1, index === 0 ? "user.created" : "user.updated")));
    for (let index = events.length - 1; index > 0; index--) {
      const other = Math.floor(random() * (index + 1));
      [events[index], events[other]] = [events[other]!, events[index]!];
    }
    // About one in six first attempts fails with 503, to be retried while newer states pass.
    for (const event of events.filter((_, index) => index % 6 === 0)) {
      let attempts = 0;
      answers.set(event.id, () => (++attempts === 1 ? 503 : 200));
    }
    const staleBefore = await dispatched("fresh", "stale");
    const deliveredBefore = await dispatched("fresh", "delivered");

    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < events.length) await post(events[next++]!);
      }),
    );
    await plain.until((requests) => requests.filter((request) => request.status === 200).length >= events.length, 60_000);
    await until("every event of the fresh route delivered or stale", async () => (await dispatched("fresh", "delivered")) - deliveredBefore + (await dispatched("fresh", "stale")) - staleBefore >= events.length);

    expect(overlaps, "two states of one user were at the sink at once").toEqual([]);
    for (const user of users) {
      const versions = finished.get(user) ?? [];
      expect(versions.slice().sort((a, b) => a - b), `${user}: ${versions.join(",")}`).toEqual(versions);
      expect(versions.at(-1), `${user}: ${versions.join(",")}`).toBe(8);
    }
    const deliveredIds = new Set(fresh.requests.filter((request) => request.status === 200).map((request) => String(request.headers["webhook-id"])));
    const delivered = [...finished.values()].reduce((sum, versions) => sum + versions.length, 0);
    expect(deliveredIds.size).toBe(delivered);
    const stale = (await dispatched("fresh", "stale")) - staleBefore;
    expect(stale, "stale count = events skipped").toBe(events.length - delivered);
    expect(stale).toBeGreaterThan(0);
    expect(new Set(plain.requests.map((request) => String(request.headers["webhook-id"]))).size).toBe(events.length);
    console.info(`dropStale: ${events.length} states of ${users.length} users; fresh route got ${delivered}, skipped ${stale} as stale; plain route got ${plain.requests.length}`);
  });

  it("when a user was deleted, then an update older than the delete, or even newer, is not delivered after it; a newer create (the user made again) is", async () => {
    const user = "auth0|deleted";
    const update = userState(user, 5);
    await post(update);
    await until("the update delivered", async () => (await stateOf(update.id, "fresh")) === "delivered");
    const deleted = userState(user, 6, "user.deleted");
    await post(deleted);
    await until("the delete delivered", async () => (await stateOf(deleted.id, "fresh")) === "delivered");

    const older = userState(user, 3);
    const laterSameLife = userState(user, 9);
    await Promise.all([post(older), post(laterSameLife)]);
    await until("both updates skipped as stale", async () => (await stateOf(older.id, "fresh")) === "stale" && (await stateOf(laterSameLife.id, "fresh")) === "stale");
    // The plain route still got them: the option is the route's own.
    await plain.until((requests) => requests.some((request) => request.headers["webhook-id"] === laterSameLife.id));
    expect(finished.get(user)).toEqual([5, 6]);

    const recreated = userState(user, 10, "user.created");
    await post(recreated);
    await until("the re-creation delivered", async () => (await stateOf(recreated.id, "fresh")) === "delivered");
    expect(finished.get(user)).toEqual([5, 6, 10]);
  });

  it("when a state's first attempt gets 503 and a newer state arrives meanwhile, then the retry is skipped as stale, never delivered after the newer one", async () => {
    const user = "auth0|retried";
    const older = userState(user, 2);
    const newer = userState(user, 3);
    // The downstream fails the older state until the newer one is in: its retry always comes after.
    answers.set(older.id, () => (finished.get(user)?.includes(3) ? 200 : 503));
    await post(older);
    await fresh.until((requests) => requests.some((request) => request.headers["webhook-id"] === older.id && request.status === 503));
    await post(newer);
    await until("the older state skipped as stale after its retry", async () => (await stateOf(older.id, "fresh")) === "stale");
    expect(await stateOf(newer.id, "fresh")).toBe("delivered");
    expect(finished.get(user)).toEqual([3]);
    expect(fresh.requests.filter((request) => request.headers["webhook-id"] === older.id).every((request) => request.status === 503)).toBe(true);
  });
});

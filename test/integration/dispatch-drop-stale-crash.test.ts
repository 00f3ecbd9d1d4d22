import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkAnswer } from "../helpers/sink-server.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { useCleanup } from "../helpers/cleanup.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";


/**
 * A worker process SIGKILLed while it delivers a state of a dropStale route holds that
 * entity's lease: the entity must flow again once the lease expires (2 × timeoutMs + 1 s),
 * without going back in time.
 */
describe("dropStale: a crashed worker does not block its entity", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the worker delivering a user's state is killed, then a newer state of that user still reaches the route, after the lease expires, and no older one follows it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sk-drop-stale-crash-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const user = "auth0|crashed";
    const versionOf = (body: string) => (JSON.parse(body) as { data: { object: { version: number } } }).data.object.version;
    const finished: number[] = [];
    let held = false;
    // The first delivery of version 1 never gets an answer: its worker dies holding it.
    const sink = await startSinkServer((request) => {
      const version = versionOf(request.body);
      if (version === 1 && !held) {
        held = true;
        return new Promise<SinkAnswer>(() => {});
      }
      finished.push(version);
      return {};
    });
    cleanup.push(() => sink.close());
    const routesFile = join(dir, "routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "fresh", match: "user.*", url: sink.url, dropStale: true, timeoutMs: 1000 }]));
    const env = serviceProcessEnv({
      ROUTES_FILE: routesFile,
      DATA_DIR: dir,
      SHUTDOWN_TIMEOUT_MS: "1000",
      DISPATCH_BACKOFF_BASE_MS: "20",
      DISPATCH_BACKOFF_MAX_MS: "200",
      // The shortest lock allowed: the killed worker's job is taken over within about 2 s.
      DISPATCH_LOCK_DURATION_MS: "1000",
    });
    const receiver = await startServiceProcess("receiver", env);
    cleanup.push(() => receiver.kill());
    const post = async (event: CloudEvent) => {
      const answer = await fetch(`${receiver.publicUrl}/webhooks`, { method: "POST", body: JSON.stringify(event), headers: { authorization, "content-type": "application/cloudevents+json" } });
      expect(answer.status).toBe(202);
    };
    const state = (version: number) => {
      const at = new Date(Date.parse("2026-01-01T00:00:00Z") + version * 1000).toISOString();
      return userEvent({ time: at, data: { object: { user_id: user, updated_at: at, version } } });
    };

    const doomed: ServiceProcess = await startServiceProcess("worker", env);
    cleanup.push(() => doomed.kill());
    await post(state(1));
    await sink.until(() => held, 30_000);
    await doomed.kill();

    const survivor = await startServiceProcess("worker", env);
    cleanup.push(() => survivor.kill());
    await post(state(2));
    await sink.until(() => finished.includes(2), 60_000);
    // Version 1's job comes back from the dead worker (stalled), and ends stale or, had it
    // run first, delivered before version 2: never after it.
    await until(
      "version 1 ended",
      async () => {
        const text = await (await fetch(`${survivor.adminUrl}/metrics`)).text();
        const counted = (outcome: string) => Number(new RegExp(`streamkeeper_dispatch_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`).exec(text)?.[1] ?? 0);
        return counted("stale") + counted("delivered") >= 2;
      },
      { withinMs: 60_000, detail: () => survivor.output().slice(-2000) },
    );
    expect(finished.slice().sort((a, b) => a - b)).toEqual(finished);
    expect(finished.at(-1)).toBe(2);
  });
});

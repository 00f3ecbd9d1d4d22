import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { basicAuthorization } from "../helpers/credentials.js";

const login = basicAuthorization("operator", "admin-token");

/**
 * The dashboard's "Retry" and "Retry all" (bull-board's API, as the page calls it) give a
 * dead letter fresh attempts, like `streamkeeper dead-letters replay`: a dead letter that
 * used up its 2 attempts and then fails once more is retried, not a dead letter again.
 */
describe("dashboard: retrying a dead letter", () => {
  let dir: string;
  let sink: SinkServer;
  let service: TestService;
  /** events answered 503 once more after the retry */
  const failOnceMore = new Set<string>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sk-dash-retry-"));
    sink = await startSinkServer(() => ({ status: 503 }));
    const routesFile = join(dir, "routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "crm", match: "*", url: sink.url, maxAttemptsPerEvent: 2 }]));
    service = await startTestService({ ROUTES_FILE: routesFile, ADMIN_TOKEN: "admin-token" });
  });

  afterAll(async () => {
    await service?.close();
    await sink?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function deadLetters(): Promise<string[]> {
    const answer = await fetch(`${service.adminUrl}/admin/queues/api/queues?activeQueue=deliver-crm&status=failed&page=1`, { headers: { authorization: login } });
    const body = (await answer.json()) as { queues: { name: string; jobs: { id: string }[] }[] };
    return body.queues.find((queue) => queue.name === "deliver-crm")!.jobs.map((job) => job.id);
  }

  it("when Retry and Retry all are pressed for exhausted dead letters, then each gets its attempts back and is delivered after one more failure", async () => {
    const [one, two] = [userEvent(), userEvent()];
    for (const event of [one, two]) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await expect.poll(deadLetters, { timeout: 30_000, interval: 100 }).toHaveLength(2);

    failOnceMore.add(one.id).add(two.id);
    sink.answer = (request) => {
      const id = String(request.headers["webhook-id"]);
      if (failOnceMore.delete(id)) return { status: 503 };
      return { status: 200 };
    };
    const retryOne = await fetch(`${service.adminUrl}/admin/queues/api/queues/deliver-crm/${one.id}/retry`, { method: "PUT", headers: { authorization: login } });
    expect(retryOne.status).toBe(204);
    const retryAll = await fetch(`${service.adminUrl}/admin/queues/api/queues/deliver-crm/retry/failed`, { method: "PUT", headers: { authorization: login } });
    expect(retryAll.ok).toBe(true);

    const delivered = (id: string) => sink.requests.some((request) => request.headers["webhook-id"] === id && request.status === 200);
    await sink.until(() => delivered(one.id) && delivered(two.id), 30_000);
    expect(await deadLetters()).toEqual([]);
  });
});

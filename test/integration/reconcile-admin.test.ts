import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { tenantId } from "../helpers/fixtures.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { createStream, emit, settled, tenantEnv } from "./emulator-test-kit.js";
import { adminHeaders } from "../helpers/credentials.js";
import { until } from "../helpers/until.js";

/** `POST /admin/reconcile` and `GET /admin/reconcile/:jobId` on the real service (README.md#http-surfaces). */
const adminToken = "reconcile-admin-token";
const auth = adminHeaders(adminToken);

let emulator: Emulator;
let service: TestService;
let streamId: string;

beforeAll(async () => {
  emulator = await startEmulator({ timeScale: 0.01 });
  service = await startTestService({
    ADMIN_TOKEN: adminToken,
    ...tenantEnv(emulator),
    RECONCILE_RATE_PER_SECOND: "20",
  });
  streamId = await createStream(emulator, `${service.publicUrl}/webhooks`, {
    auth: { method: "basic", username: testCredentials.username, password: "not-the-password" },
  });
});

afterAll(async () => {
  await service?.close();
  await emulator?.close();
});

function post(body: unknown, headers: Record<string, string> = auth): Promise<Response> {
  return fetch(`${service.adminUrl}/admin/reconcile`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function untilDone(jobId: string): Promise<{ state: string; outcome: string | null }> {
  let state = "";
  return until(
    `job ${jobId} completed or failed`,
    async () => {
      const response = await fetch(`${service.adminUrl}/admin/reconcile/${jobId}`, { headers: auth });
      expect(response.status).toBe(200);
      const job = (await response.json()) as { state: string; outcome: string | null };
      state = job.state;
      return (job.state === "completed" || job.state === "failed") && job;
    },
    { everyMs: 25, detail: () => `still ${state}` },
  );
}

describe("admin reconcile API", () => {
  it("when ids are posted, then 202 lists a job per id and each job's GET ends with its outcome", async () => {
    const failed = await emit(emulator, "user.created");
    expect((await settled(emulator, failed)).status).toBe("failed");
    const unknown = tenantId("evt");

    const response = await post({ eventIds: [failed, unknown], streamId });
    expect(response.status).toBe(202);
    const { jobs } = (await response.json()) as { jobs: { eventId: string; jobId: string }[] };
    expect(jobs.map((job) => job.eventId)).toEqual([failed, unknown]);

    expect(await untilDone(jobs[0]!.jobId)).toMatchObject({ state: "completed", outcome: "recovered" });
    expect(await untilDone(jobs[1]!.jobId)).toMatchObject({ state: "completed", outcome: "not_found" });

    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^streamkeeper_reconcile_total\{outcome="recovered"\} 1$/m);
    expect(metrics).toMatch(/^streamkeeper_reconcile_total\{outcome="not_found"\} 1$/m);
  });

  it("when forced, then an id already received is replayed; without force it is already_received", async () => {
    const id = await emit(emulator, "user.created");
    await settled(emulator, id);
    const first = (await (await post({ eventIds: [id], streamId })).json()) as { jobs: { jobId: string }[] };
    expect((await untilDone(first.jobs[0]!.jobId)).outcome).toBe("recovered");
    const again = (await (await post({ eventIds: [id], streamId })).json()) as { jobs: { jobId: string }[] };
    expect((await untilDone(again.jobs[0]!.jobId)).outcome).toBe("already_received");
    const forced = (await (await post({ eventIds: [id], streamId, force: true })).json()) as { jobs: { jobId: string }[] };
    expect((await untilDone(forced.jobs[0]!.jobId)).outcome).toBe("recovered");
  });

  it("when the token is missing or wrong, then 401 with a bearer challenge", async () => {
    for (const headers of [{}, { authorization: "Bearer wrong" }] as Record<string, string>[]) {
      const response = await post({ eventIds: [tenantId("evt")] }, headers);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
    expect((await fetch(`${service.adminUrl}/admin/reconcile/1`)).status).toBe(401);
  });

  it("when the body is bad, then 400 problem+json naming the field", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^eventIds: /],
      [{ eventIds: [] }, /^eventIds: give at least one event id/],
      [{ eventIds: "evt_1" }, /^eventIds: must be an array of event ids/],
      [{ eventIds: ["evt_1", ""] }, /^eventIds\.1: must be a non-empty event id/],
      [{ eventIds: ["evt_1"], streamId: "est_short" }, /^streamId: must be a stream id such as est_aD5AUDqZbHFcMoEx2LxAk9 \(est_ and 22 letters or digits/],
      [{ eventIds: ["evt_1"], streamId: "x".repeat(26) }, /^streamId: must be a stream id such as est_/],
      [{ eventIds: ["evt_1"], force: "yes" }, /^force: must be true or false/],
      [{ eventIds: ["evt_1"], eventIDs: ["evt_2"] }, /^unknown field eventIDs; the fields are eventIds, streamId, force/],
      [{ eventIds: Array.from({ length: 10_001 }, (_, index) => `evt_${index}`) }, /^eventIds: at most 10000 ids per request; split the list/],
      ["{not json", /JSON/],
    ];
    for (const [body, detail] of cases) {
      const response = await post(body);
      expect(response.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(((await response.json()) as { detail: string }).detail).toMatch(detail);
    }
  });

  it("when a job id is unknown, then 404 saying where job ids come from", async () => {
    const response = await fetch(`${service.adminUrl}/admin/reconcile/no-such-job`, { headers: auth });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { detail: string }).detail).toContain("POST /admin/reconcile");
  });
});

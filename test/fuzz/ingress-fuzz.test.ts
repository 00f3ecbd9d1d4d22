import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { ingressCases, type IngressCase } from "./ingress-requests.js";

const limit = 16_384;
/** A fixed count, run in full (not bounded by time): FUZZ_RUNS for a longer run. */
const runs = Number(process.env.FUZZ_RUNS ?? 300);
/** A fixed seed, so a failure found in CI is found again: FUZZ_SEED to explore others. */
const seed = Number(process.env.FUZZ_SEED ?? 20261125);
/**
 * README.md#http-surfaces: the only answers the ingress may give to any request to
 * /webhooks; a 503 only when the event could not be stored (never for the input itself).
 */
const allowed = new Set([202, 400, 401, 413, 415, 503]);
/** What a 503 for want of storage says (receiver-app.ts). */
const storage503 = /could not be stored right now/;

/** The webhook-id header the dispatcher sends for an id (create-delivery-processor.ts). */
const webhookId = (id: string) => (/^[\x21-\x7e]+$/.test(id) ? id : encodeURIComponent(id));

interface Answer {
  status: number;
  contentType: string;
  wwwAuthenticate?: string;
  text: string;
}

/** One request exactly as generated (header case, chunked or not), on its own connection. */
function send(base: string, sent: IngressCase): Promise<Answer> {
  return new Promise((ok, fail) => {
    let answered = false;
    const req = request(`${base}${sent.path}`, { method: "POST", headers: sent.headers, agent: false, timeout: 15_000 }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        ok({ status: res.statusCode ?? 0, contentType: String(res.headers["content-type"] ?? ""), wwwAuthenticate: res.headers["www-authenticate"], text: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    // A receiver may answer (401, 413) before it has read the whole body; that is not a failure.
    req.on("error", (error) => {
      if (!answered) fail(error);
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 15 s")));
    if (sent.chunked) {
      req.write(sent.body);
      req.end();
    } else req.end(sent.body);
  });
}

/**
 * Fuzzing the public ingress (the service in its own process, as deployed): random
 * bodies, content types, ce-* headers, credentials, paths and sizes around
 * WEBHOOK_MAX_BODY_BYTES. Never a 5xx, never a crash; each answer one of
 * 202/400/401/413/415 with a problem+json `detail` for errors; every valid event
 * answered 202 is in the ledger.
 */
describe("fuzz: the public ingress", () => {
  let service: ServiceProcess;
  let sink: SinkServer;
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-fuzz-"));
    sink = await startSinkServer();
    env = {
      DOWNSTREAM_URL: sink.url,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: dataDir,
      WEBHOOK_USERNAME: testCredentials.username,
      WEBHOOK_PASSWORD: testCredentials.password,
      WEBHOOK_MAX_BODY_BYTES: String(limit),
      LOG_LEVEL: "warn",
    };
    // Receiver and dispatcher in one process: every event answered 202 must reach the route.
    service = await startServiceProcess("all", env);
  }, 90_000);
  afterAll(async () => {
    await service?.stop();
    await sink?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it(`when ${runs} random requests arrive (seed ${seed}), then each gets 202/400/401/413/415 (problem+json for errors, never a 5xx but a storage 503), the process stays up, and every event answered 202 is stored and delivered`, async () => {
    console.info(`fuzz: seed ${seed} (FUZZ_SEED), ${runs} requests (FUZZ_RUNS)`);
    const started = Date.now();
    const stored: string[] = [];
    const seen: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(ingressCases(testCredentials, limit), async (sent) => {
        const answer = await send(service.publicUrl!, sent);
        seen[answer.status] = (seen[answer.status] ?? 0) + 1;
        const what = `${sent.label} ${sent.path} ${JSON.stringify(sent.headers)} (${sent.body.length} bytes${sent.chunked ? ", chunked" : ""}): ${answer.status} ${answer.text.slice(0, 200)}`;
        expect(allowed.has(answer.status), what).toBe(true);
        if (answer.status === 503) {
          expect(answer.text, what).toMatch(storage503);
          return;
        }
        if (sent.badPath) expect(answer.status, what).toBe(400);
        else if (!sent.authOk) {
          expect(answer.status, what).toBe(401);
          expect(answer.wwwAuthenticate, what).toMatch(/^Basic /);
        } else if (sent.expected !== undefined) expect(answer.status, what).toBe(sent.expected);
        if (answer.status === 202) {
          stored.push(...sent.ids);
          return;
        }
        expect(answer.contentType, what).toMatch(/^application\/problem\+json/);
        const problem = JSON.parse(answer.text) as { status: number; detail: unknown };
        expect(problem.status, what).toBe(answer.status);
        expect(typeof problem.detail === "string" && problem.detail.length > 0, what).toBe(true);
      }),
      { numRuns: runs, seed },
    );
    expect(Object.values(seen).reduce((sum, count) => sum + count, 0), "requests sent and answered").toBe(runs);

    expect(service.child.exitCode, service.output().slice(-2000)).toBeNull();
    expect((await fetch(`${service.publicUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200);
    // Bad input is logged as a warning at most: an error line would mean a fault inside.
    const errors = service.output().split("\n").filter((line) => /"level":(50|60)/.test(line));
    expect(errors).toEqual([]);

    const store = await inspectStore(loadConfig(env));
    try {
      const missing: string[] = [];
      for (const id of stored) if (!(await store.ledger.has(id))) missing.push(id);
      expect(missing, "valid events answered 202 but not in the ledger").toEqual([]);
    } finally {
      await store.close();
    }
    expect(stored.length).toBeGreaterThan(0);

    // No acknowledged event left undelivered: each reaches the route, under its own webhook-id.
    const wanted = new Set(stored.map(webhookId));
    const received = () => new Set(sink.requests.map((request) => String(request.headers["webhook-id"])));
    await sink.until(() => {
      const got = received();
      return [...wanted].every((id) => got.has(id));
    }, Math.max(120_000, runs * 20)).catch(() => {});
    const got = received();
    const undelivered = [...wanted].filter((id) => !got.has(id));
    console.info(
      `fuzz: seed ${seed}, ${runs} requests in ${((Date.now() - started) / 1000).toFixed(1)} s, answers ${JSON.stringify(seen)}, ${stored.length} events acknowledged, ${stored.length - undelivered.length} of them delivered`,
    );
    expect(undelivered, "events answered 202 but never delivered").toEqual([]);
    expect(service.child.exitCode, service.output().slice(-2000)).toBeNull();
  }, Math.max(180_000, runs * 100));
});

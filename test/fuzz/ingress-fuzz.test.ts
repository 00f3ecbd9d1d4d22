import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startServiceProcess, type ServiceProcess } from "../chaos/start-service-process.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { testSeed } from "../helpers/test-seed.js";
import { ingressCases, type IngressCase } from "./ingress-requests.js";

const limit = 4096;
const runs = Number(process.env.FUZZ_RUNS ?? 300);
/** CONTRACT.md, "Public ingress": the only answers the ingress may give to any request to /webhooks. */
const allowed = new Set([202, 400, 401, 413, 415]);

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
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sk-fuzz-"));
    env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-${randomUUID()}`,
      DATA_DIR: dataDir,
      WEBHOOK_USERNAME: testCredentials.username,
      WEBHOOK_PASSWORD: testCredentials.password,
      WEBHOOK_MAX_BODY_BYTES: String(limit),
      LOG_LEVEL: "warn",
    };
    service = await startServiceProcess("receiver", env);
  }, 90_000);
  afterAll(async () => {
    await service?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it(`when ${runs} random requests arrive, then each gets 202/400/401/413/415 (problem+json for errors), the process stays up, and every valid event answered 202 is stored`, async () => {
    const stored: string[] = [];
    const seen: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(ingressCases(testCredentials, limit), async (sent) => {
        const answer = await send(service.publicUrl!, sent);
        seen[answer.status] = (seen[answer.status] ?? 0) + 1;
        const what = `${sent.label} ${sent.path} ${JSON.stringify(sent.headers)} (${sent.body.length} bytes${sent.chunked ? ", chunked" : ""}): ${answer.status} ${answer.text.slice(0, 200)}`;
        expect(allowed.has(answer.status), what).toBe(true);
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
      // The full count, or a failure that says the time ran out: never a pass on fewer.
      { numRuns: runs, seed: testSeed("ingress fuzz"), interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true },
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
    console.info(`fuzz: ${runs} requests, answers ${JSON.stringify(seen)}, ${stored.length} valid events stored`);
    expect(stored.length).toBeGreaterThan(0);
  }, 180_000);
});

import express, { type NextFunction, type Request, type Response } from "express";
import type { CloudEvent } from "../events/cloud-event.js";
import { InvalidEventError } from "../events/invalid-event-error.js";
import { parseCloudEvents } from "../events/parse-cloud-events.js";
import { brokenTenantRules } from "../events/tenant-rules.js";
import type { Logger } from "../logging/logger.js";
import { createRepeatLog, type RepeatLog } from "../logging/repeat-log.js";
import { eventsNonconforming, eventsRejected, webhookRequestDuration, webhookRequests } from "../metrics/registry.js";
import type { EventStore } from "../queue/event-store.js";
import { isRedisUnreachable } from "../errors/redis-unreachable.js";
import { challengeFor, createCredentialCheck } from "./check-credentials.js";
import { webhookAuthPrevious } from "../metrics/previous-credential-uses.js";
import { createHealthRouter } from "./health-router.js";
import { rememberAnswer } from "./remember-answer.js";
import { sendProblem } from "./problem.js";
import type { ResolvedWebhookAuth } from "../credentials/webhook-credentials.js";

export interface ReceiverDeps {
  auth: ResolvedWebhookAuth;
  store: EventStore;
  maxBodyBytes: number;
  defaultStreamId?: string;
  /** Redis reachable and writable. */
  ready(): Promise<boolean>;
  /** False while the embedded Redis is dead and could not be restarted: /healthz fails. */
  alive?(): boolean;
  logger: Logger;
  /** How long a store may take before the request is answered 503. @defaultValue 1500 */
  storeTimeoutMs?: number;
  /** REDIS_MIN_REPLICAS above 0: resolves once enough replicas hold the request's writes, rejects otherwise (503). */
  replicated?: () => Promise<void>;
  /** LOG_REPEAT_INTERVAL_SECONDS in ms: refusals and 503s are logged once per interval with their count. @defaultValue 60000 */
  logRepeatsEveryMs?: number;
}

/** How long the rest of a refused request's body is discarded before its connection is cut. */
const refusedBodyLingerMs = 2000;

/** Raised when events cannot be stored now: answered 503, so the tenant retries. */
class StoreUnavailableError extends Error {}

/**
 * The public ingress. It answers 202 only once every event of the request is in Redis,
 * 4xx only for a request that can never succeed (the tenant drops a delivery for good on
 * a 4xx, docs/tenant.md#webhook-delivery), and 503 with Retry-After for everything transient.
 */
export function createReceiverApp(deps: ReceiverDeps) {
  const checkCredentials = createCredentialCheck(deps.auth, () => webhookAuthPrevious.inc());
  const challenge = challengeFor(deps.auth);
  const storeTimeoutMs = deps.storeTimeoutMs ?? 1500;
  // A Redis outage or a tenant with the wrong credentials fails every request alike: a
  // line per interval with the count, not a line (and a stack) per request.
  const logRepeatsEveryMs = deps.logRepeatsEveryMs ?? 60_000;
  const logRefused = createRepeatLog(deps.logger, "warn", "webhook refused: bad or missing credentials", logRepeatsEveryMs);
  const logNotStored = createRepeatLog(deps.logger, "error", "webhook not stored: answering 503", logRepeatsEveryMs);
  // A tenant (or a test tool) sending odd ids sends them all day: one line per rule broken
  // and interval, with the count, not a line per event.
  const logNonconforming = createRepeatLog(deps.logger, "warn", "stored an event that breaks the tenant's rules", logRepeatsEveryMs);
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);

  // Credentials are judged from the headers alone, before any of the body is read. Every
  // request is measured from here, a refused one too (one step, not two: docs/benchmarks.md).
  const authenticate = (req: Request, res: Response, next: NextFunction) => {
    measure(res);
    const problem = checkCredentials(req.headers);
    const expectsContinue = /^100-continue$/i.test(req.headers.expect ?? "");
    if (!problem) {
      if (expectsContinue) res.writeContinue();
      return next();
    }
    eventsRejected.inc({ reason: "unauthorized" });
    logRefused({ problem, path: req.path, ip: req.ip }, problem);
    // A client waiting for `100 Continue` (serve.ts hands those to us) never sends its body:
    // answer and close. A body already on its way is discarded as it comes (Node dumps it,
    // nothing is kept), so the client reads the 401 before the connection ends: a close with
    // unread data sends a reset, which can destroy the answer in the client's buffers. A body
    // still coming after refusedBodyLingerMs is cut.
    sendProblem(res, 401, problem, { ...(expectsContinue ? { Connection: "close" } : {}), ...(challenge ? { "WWW-Authenticate": challenge } : {}) });
    if (expectsContinue) return;
    res.once("finish", () => {
      if (req.complete) return;
      const cut = setTimeout(() => req.socket.destroy(), refusedBodyLingerMs).unref();
      req.once("end", () => clearTimeout(cut));
    });
  };
  const rawBody = express.raw({ type: () => true, limit: deps.maxBodyBytes });

  const receive = async (req: Request, res: Response) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const events = parseCloudEvents({ headers: req.headers, body });
    const pathStream = typeof req.params.streamId === "string" ? req.params.streamId : undefined;
    const stored = async () => {
      const results = await Promise.all(events.map((event) => deps.store.store(event, { origin: "webhook", streamId: streamOf(event, pathStream) })));
      // A duplicate too: its first store may have been answered 503 for want of replicas.
      await deps.replicated?.();
      return results;
    };
    const results = await withTimeout(stored(), storeTimeoutMs);
    for (const event of events) noteTenantRules(event, logNonconforming);
    const duplicates = results.filter((result) => result.status === "duplicate").length;
    res.status(202).json({ accepted: results.length - duplicates, duplicates });
  };

  const streamOf = (event: CloudEvent, pathStream: string | undefined) =>
    pathStream ?? (typeof event.a0stream === "string" ? event.a0stream : undefined) ?? deps.defaultStreamId;

  // Two routes, not one with a path list, so a trace names the one that matched.
  for (const path of ["/webhooks", "/webhooks/:streamId"]) app.post(path, authenticate, rawBody, receive);
  // Public and unauthenticated: an answer up to 1 s old, so callers cannot load Redis. After
  // the webhook routes: a webhook never enters this router (docs/benchmarks.md).
  app.use(createHealthRouter(rememberAnswer(deps.ready, 1000), deps.alive));
  app.use((req, res) => sendProblem(res, 404, `no route for ${req.method} ${req.path}: events go to POST /webhooks/<stream-id>`));

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (error instanceof InvalidEventError) {
      eventsRejected.inc({ reason: error.status === 415 ? "content_type" : "invalid_event" });
      deps.logger.warn({ path: req.path, detail: error.detail }, "webhook refused: invalid event");
      return sendProblem(res, error.status, error.detail);
    }
    const parserError = error as { type?: string; status?: number };
    if (parserError.type === "entity.too.large") {
      eventsRejected.inc({ reason: "too_large" });
      return sendProblem(res, 413, `the body is larger than ${deps.maxBodyBytes} bytes (WEBHOOK_MAX_BODY_BYTES)`);
    }
    if (parserError.type === "encoding.unsupported") {
      eventsRejected.inc({ reason: "content_type" });
      return sendProblem(res, 415, "unsupported content encoding: send the body as identity, gzip, deflate or br");
    }
    if (parserError.type === "request.aborted" || parserError.type === "request.size.invalid") {
      return sendProblem(res, 400, "the request body was incomplete");
    }
    // The router's and body-parser's other 400s are about the request itself and cannot
    // succeed as sent: a path that does not percent-decode, a body that does not decode
    // as its Content-Encoding says (found by test/fuzz). Never a 503 for those.
    if (parserError.status === 400) {
      eventsRejected.inc({ reason: "invalid_event" });
      const detail =
        error instanceof URIError
          ? `the path is not valid percent-encoding (${error.message}): send POST /webhooks/<stream-id>`
          : `the body does not decode as Content-Encoding ${String(req.headers["content-encoding"] ?? "identity")} (${(error as Error).message}): send it as identity, gzip, deflate or br`;
      return sendProblem(res, 400, detail);
    }
    // Anything else is transient from the tenant's point of view: never a 4xx.
    // Redis away or too slow is an expected condition, said once per outage by the process
    // (watch-redis-reachability.ts): its message here, no stack. Anything else keeps its stack.
    const expected = error instanceof StoreUnavailableError || isRedisUnreachable(error);
    logNotStored(expected ? { error: (error as Error).message, path: req.path } : { err: error, path: req.path });
    sendProblem(res, 503, "the event could not be stored right now; retry later", { "Retry-After": "1" });
  });

  async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new StoreUnavailableError(`storing took longer than ${ms} ms`)), ms);
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  return app;
}

const requestDuration = webhookRequestDuration.labels();

/** Counts the request by its answer's status and observes its duration, once answered. */
function measure(res: Response) {
  // One listener for every response, its start in res.locals: no closure per request.
  res.locals.receivedAt = performance.now();
  res.on("finish", countAnswered);
}

function countAnswered(this: Response) {
  webhookRequests.labels(String(this.statusCode)).inc();
  requestDuration.observe((performance.now() - (this.locals.receivedAt as number)) / 1000);
}

function noteTenantRules(event: CloudEvent, log: RepeatLog) {
  const broken = brokenTenantRules(event);
  if (broken.length === 0) return;
  for (const rule of broken) eventsNonconforming.inc({ rule });
  log({ eventId: event.id, type: event.type, broken }, broken.join(","));
}

import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { AttemptOutcome, AttemptRecord } from "../archive/archive-record.js";
import type { Logger } from "../logging/logger.js";
import { replayDeliveries } from "../metrics/archive-metrics.js";
import { dispatchDuration, dispatchTotal } from "../metrics/registry.js";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import { unboundedAttempts } from "../queue/delivery-queues.js";
import type { EventLedger } from "../queue/event-ledger.js";
import { laneOfPriority } from "../queue/lane.js";
import type { FreshnessRecorder } from "../freshness/create-freshness-recorder.js";
import type { DownstreamClient } from "./downstream-client.js";
import { decide } from "./retry-policy.js";
import type { RouteCircuit } from "./route-circuit.js";
import { RetryableDeliveryError } from "./retryable-delivery-error.js";
import type { Route } from "../routes/route.js";
import { signWebhook } from "./sign-webhook.js";
import { toWellFormed } from "../events/is-well-formed.js";
import type { StaleGuard } from "./stale-guard.js";
import { TransformError } from "../routes/route-transform.js";
import { createBodyShaper, type ShapedBody } from "./shape-body.js";

export interface DeliveryProcessorDeps {
  route: Route;
  client: DownstreamClient;
  ledger: EventLedger;
  logger: Logger;
  /** Aborted when shutdown runs out of time (the client's requests are cut too): in-flight attempts go back to the queue. */
  shutdown: AbortSignal;
  /** Set for a `dropStale` route: each attempt runs inside the entity's lease (stale-guard.ts). */
  staleGuard?: StaleGuard;
  /** The route's circuit breaker (route-circuit.ts); none: always send. */
  circuit?: RouteCircuit;
  /** DISPATCH_RETRY_WINDOW_SECONDS in ms: a failure this long after the job's first one is its last. None: attempts alone decide. */
  retryWindowMs?: number;
  /** Observes delivery_lag_seconds and the operator view's freshness at each 2xx (create-freshness-recorder.ts); none: not measured. */
  freshness?: FreshnessRecorder;
  /** The archive's outbox, when the archive is on: each attempt and outcome is recorded there (not awaited). */
  archive?(record: AttemptRecord): Promise<void>;
  /** TRANSFORM_TIMEOUT_MS: how long the route's transform may run for one event. @defaultValue 100 */
  transformTimeoutMs?: number;
}

export type DeliveryResult = { status: "delivered"; at: number } | { status: "already_delivered"; at: number } | { status: "stale"; at: number };

/**
 * Delivers one job of one route's queue. Throwing hands the job back to BullMQ:
 * `RetryableDeliveryError` retries it with the worker's backoff, `UnrecoverableError`
 * fails it at once; a failed job is the dead letter.
 */
export function createDeliveryProcessor({ route, client, ledger, logger, shutdown, staleGuard, circuit, retryWindowMs, freshness, archive, transformTimeoutMs = 100 }: DeliveryProcessorDeps) {
  // Lower-case once, so a route header cannot duplicate one of ours in another case.
  const routeHeaders = Object.fromEntries(Object.entries(route.headers).map(([name, value]) => [name.toLowerCase(), value]));
  const labels = { route: route.name };
  // Bound once: counting a delivery is an addition (docs/benchmarks.md, "The webhook's way through Express, and metrics on the per-event path").
  const duration = dispatchDuration.labels(route.name);
  const deliveredCount = dispatchTotal.labels(route.name, "delivered");
  const shapeBody = createBodyShaper(route, transformTimeoutMs);

  return async (job: Job<DeliveryJobData>, token?: string): Promise<DeliveryResult> => {
    const { event, origin, force, recheck } = job.data;
    // Plain fields, not logger.child(): a child per job costs more than the delivery's own work.
    const context = { route: route.name, eventId: event.id, jobId: job.id, attempt: job.attemptsMade + 1 };
    // Like the ledger's mark below: not awaited, off the delivery's critical path; lost only with Redis, and then said.
    const recordAttempt = (outcome: AttemptOutcome, result?: { status: number } | { error: string }, reason?: string) => {
      if (job.data.replayId) replayDeliveries.inc({ ...labels, outcome });
      return archive?.({
        kind: "attempt",
        eventId: event.id,
        receivedAt: job.data.receivedAt,
        route: route.name,
        key: `${job.id}:${job.attemptsStarted}`,
        at: Date.now(),
        ...(result && "status" in result ? { status: result.status } : {}),
        ...(reason ? { error: reason } : result && "error" in result ? { error: result.error } : {}),
        outcome,
        ...(job.data.replayId ? { replayId: job.data.replayId } : {}),
      }).catch((error: unknown) => logger.warn({ ...context, err: error }, "could not add this attempt to the archive's outbox; the archive lacks it"));
    };

    // Once per route: an id this route answered 2xx for within DEDUPE_TTL_SECONDS is not
    // sent again, whether it came back by webhook or reconcile, unless forced. The store
    // admits an id once (the ledger), under a job id derived from it, so only a job that
    // ran before (a retry, or one a crashed worker left) or one stored over a record of
    // earlier deliveries (`recheck`) can follow such a 2xx: a first run skips the read,
    // a round trip on every delivery's critical path. "Ran before" is a finished attempt or
    // a stall, not attemptsStarted: BullMQ counts every move to active in it, also each
    // dropStale wait and circuit hold, which sent nothing.
    if (!force && (recheck || job.attemptsMade > 0 || job.stalledCounter > 0)) {
      const at = await ledger.deliveredAt(event.id, route.name);
      if (at !== undefined) {
        logger.info({ ...context, deliveredAt: new Date(at).toISOString() }, "event already delivered to this route; not sent again");
        return { status: "already_delivered", at };
      }
    }

    // Before the circuit: a transform that fails is the route's fault, not the downstream's,
    // and retrying it would fail the same way. A dead letter, replayable once the route is fixed.
    let shaped: ShapedBody;
    try {
      shaped = await shapeBody(job.data);
    } catch (error) {
      if (!(error instanceof TransformError)) throw error;
      const reason = `the route's transform ${error.message}`;
      dispatchTotal.inc({ ...labels, outcome: "dead_letter" });
      void recordAttempt("dead_letter", { error: reason });
      logger.warn({ ...context, reason }, "delivery failed for good: the event is a dead letter of this route");
      throw new UnrecoverableError(reason);
    }
    const { body } = shaped;

    // An open circuit sends one probe; every other job goes back to the queue, no attempt spent.
    const admission = circuit ? await circuit.admit() : "send";
    if (admission === "hold") throw Worker.RateLimitError();

    const webhookId = headerSafe(event.id);
    const headers: Record<string, string> = {
      ...routeHeaders,
      "content-type": shaped.contentType,
      "user-agent": "streamkeeper",
      "x-streamkeeper-origin": job.data.replayId ? "replay" : origin,
      // The same on every attempt, so the downstream can drop a repeat (README.md#routes).
      "webhook-id": webhookId,
      // Signed per attempt: verifiers reject timestamps older than a few minutes.
      ...(route.secret ? signWebhook(route.secret, webhookId, Math.floor(Date.now() / 1000), body) : {}),
    };
    const send = async () => {
      const endTimer = duration.startTimer();
      const answer = await client.post(headers, body);
      endTimer();
      return answer;
    };
    const result = staleGuard ? await staleGuard(job, token, context, send) : await send();
    if (result === "stale") {
      const at = Date.now();
      freshness?.skippedStale(route.name, at);
      void recordAttempt("stale");
      return { status: "stale", at };
    }

    // A 2xx that came back as the deadline hit is recorded below, never sent again.
    if (shutdown.aborted && "error" in result) {
      // Shutdown ran out of time: put the job back without spending an attempt.
      logger.warn(context, "delivery interrupted by shutdown; the job goes back to the queue");
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }

    const decision = decide(result);
    // Only an answer closes the circuit, not a request that could not be sent.
    if (decision.action !== "retry" && "status" in result) circuit?.answered();
    if (decision.action === "delivered") {
      const at = Date.now();
      // Recorded as BullMQ completes the job, in the same script call (mark-at-completion.ts):
      // the record serves a later run of this id (above) and GET /admin/events.
      deliveredCount.inc();
      freshness?.delivered(route, origin, laneOfPriority(job.opts.priority), event.time, at);
      void recordAttempt("delivered", result);
      if (logger.isLevelEnabled("debug")) logger.debug({ ...context, status: "status" in result ? result.status : undefined }, "event delivered");
      return { status: "delivered", at };
    }

    if (decision.action === "retry" && circuit && (await circuit.failed(admission, decision.reason))) {
      dispatchTotal.inc({ ...labels, outcome: "retry" });
      void recordAttempt("retry", result, decision.reason);
      if (logger.isLevelEnabled("debug")) logger.debug({ ...context, reason: decision.reason }, "delivery failed; the route's circuit is open, the event waits in the queue");
      throw Worker.RateLimitError();
    }

    const attempts = job.opts.attempts ?? 1;
    const expired = decision.action === "retry" && retryWindowMs !== undefined && (await retryingFor(job)) >= retryWindowMs;
    const last = decision.action === "fail" || expired || job.attemptsMade + 1 >= attempts;
    dispatchTotal.inc({ ...labels, outcome: last ? "dead_letter" : "retry" });
    void recordAttempt(last ? "dead_letter" : "retry", result, "reason" in decision ? decision.reason : undefined);
    // `attempts`: those made; `maxAttempts` only where the route sets one (unboundedAttempts is no figure to show).
    if (last) logger.warn({ ...context, reason: decision.reason, attempts: job.attemptsMade + 1, maxAttempts: attempts === unboundedAttempts ? undefined : attempts, retryWindowMs: expired ? retryWindowMs : undefined }, "delivery failed for good: the event is a dead letter of this route");
    else logger.info({ ...context, reason: decision.reason }, "delivery failed; it will be retried");
    if (decision.action === "fail") throw new UnrecoverableError(decision.reason);
    if (expired) {
      const window = retryWindowMs >= 3_600_000 ? `${retryWindowMs / 3_600_000} h` : `${retryWindowMs / 1000} s`;
      throw new UnrecoverableError(`${decision.reason}; still failing ${window} after the first failure (DISPATCH_RETRY_WINDOW_SECONDS)`);
    }
    throw new RetryableDeliveryError(decision.reason, decision.retryAfterMs);
  };
}

/**
 * The event id as a header can carry it: as it is when it is visible ASCII (every id a
 * tenant makes), else percent-encoded UTF-8, so an id with other characters is still
 * delivered, under one stable webhook-id, instead of failing every attempt.
 */
function headerSafe(id: string): string {
  // toWellFormed: a lone surrogate (refused at ingress since, but a job stored before may
  // hold one) would make encodeURIComponent throw on every attempt.
  return /^[\x21-\x7e]+$/.test(id) ? id : encodeURIComponent(toWellFormed(id));
}

/**
 * How long the job has been failing: from its first failed attempt, written into the job
 * then (a round trip on the failure path only). A replay resets the attempts, so its first
 * failure starts the window again.
 */
async function retryingFor(job: Job<DeliveryJobData>): Promise<number> {
  const now = Date.now();
  if (job.attemptsMade > 0 && job.data.failingSince !== undefined) return now - job.data.failingSince;
  await job.updateData({ ...job.data, failingSince: now });
  return 0;
}

import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidEventError } from "../events/invalid-event-error.js";
import { validateCloudEvent } from "../events/validate-cloud-event.js";
import type { Logger } from "../logger.js";
import { forgetPullMessages, notePullMessage, pullConnected, pullEvents, pullReconnects } from "../metrics/pull-metrics.js";
import type { EventStore } from "../queue/event-store.js";
import { jitteredBackoff } from "../retry-after.js";
import type { TenantClient } from "../tenant/create-tenant-client.js";
import { openEventLog, type EventLogQuery, type EventSourceMessage } from "../tenant/open-event-log.js";
import { TenantApiError } from "../tenant/tenant-api-error.js";
import { startTime, type PullStart } from "./pull-start.js";
import type { PullState, PullStateName } from "./pull-state.js";

export type ReconnectReason = "cycled" | "error" | "expired" | "rate_limited" | "auth";

export interface PullerDeps {
  state: PullState;
  /** The counted event store (the webhook's path: dedupe, fan-out, archive). */
  store: EventStore;
  tenant: Pick<TenantClient, "accessToken" | "refuseToken" | "secrets">;
  apiBaseUrl: string;
  eventTypes?: string[];
  start: PullStart;
  overlapMs: number;
  /** Another worker takes over within this long of the holder's death. */
  failoverMs: number;
  logger: Logger;
  /** First wait after a failed connection; doubles to backoffMaxMs. @defaultValue 1000 */
  backoffBaseMs?: number;
  /** @defaultValue 60000 */
  backoffMaxMs?: number;
  /** A connection silent this long (no event, marker or comment) is dropped and made again. @defaultValue 90000 */
  idleMs?: number;
  fetch?: typeof fetch;
  /** Messages stored at once (offsets kept in order all the same). @defaultValue 32 */
  inFlight?: number;
}

export interface Puller {
  /** This process's view: its state and last error (GET /admin/pull reads Redis for every process's). */
  local(): { state: PullStateName; lastError: string | null; holding: boolean };
  close(): Promise<void>;
}

/** What one connection came to: why it ended and how long to wait before the next. */
interface Ending {
  reason: ReconnectReason;
  waitMs: number;
}

/**
 * Reads the tenant's Events API (docs/tenant-api.md#pulling-events) into the event store.
 * One worker of the service holds a lease and the one connection; the others wait to take
 * over. Each event is stored (origin `pull`) before its offset is kept, and every message's
 * offset (`offset-only` markers too) is kept only once what it covers is stored, so a crash
 * re-reads and the ledger drops the repeat. A record it can never handle (not JSON, not a
 * CloudEvent) is kept aside with its raw body, counted and logged, and the offset moves past
 * it. A store that fails (Redis down) ends the connection: reading resumes from the kept
 * offset. docs/operating.md, "Pulling events", is the operator's side.
 */
export function createPuller(deps: PullerDeps): Puller {
  const { state, logger } = deps;
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  // The lease outlives a missed renewal or two, and a waiting worker looks often enough to
  // take over within failoverMs of the holder's last renewal.
  const leaseMs = Math.max(1, Math.round(deps.failoverMs * 0.6));
  const renewMs = Math.max(1, Math.round(deps.failoverMs / 5));
  const pollMs = Math.max(1, Math.round(deps.failoverMs / 10));
  const backoffBaseMs = deps.backoffBaseMs ?? 1000;
  const backoffMaxMs = deps.backoffMaxMs ?? 60_000;
  const idleMs = deps.idleMs ?? 90_000;
  /** Messages stored at once; their offsets are still kept one by one, in order. */
  const inFlight = deps.inFlight ?? 32;
  const closing = new AbortController();
  let current: PullStateName = "waiting";
  let lastError: string | null = null;
  let holding = false;
  /** A failure that repeats is said once per change (auth, tenant down); the metric counts each. */
  let lastSaid: string | undefined;
  const sayOnce = (level: "warn" | "error", message: string, fields: Record<string, unknown> = {}) => {
    // The same failure again (the tenant still down, still refusing): said at debug only.
    const key = message.replace(/\d+ ms/g, "");
    if (key === lastSaid) logger.debug(fields, message);
    else logger[level](fields, message);
    lastSaid = key;
  };
  /** The time to read from after the kept offset expired (410), while that offset is still the kept one. */
  let expired: { offset: string | undefined; from: Date } | undefined;
  /** PULL_START=now, fixed at the first attempt, so a reconnect before the first message misses nothing. */
  let firstStart: Date | undefined;
  /** Set when a connection was made: the backoff starts afresh after it. */
  let connectedSince = false;

  const setState = (next: PullStateName, error: string | null = lastError) => {
    current = next;
    lastError = error;
    if (holding) void state.report(next, error).catch(() => undefined);
  };

  const wait = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).catch(() => undefined);

  async function run(): Promise<void> {
    let failures = 0;
    while (!closing.signal.aborted) {
      let left: number;
      try {
        left = await state.lease.acquire(owner, leaseMs);
      } catch (error) {
        setState("waiting", `cannot reach Redis to hold the pull lease: ${(error as Error).message}`);
        await wait(jitteredBackoff(backoffBaseMs, failures++, backoffMaxMs), closing.signal);
        continue;
      }
      failures = 0;
      if (left > 0) {
        setState("waiting");
        await wait(Math.min(left, pollMs), closing.signal);
        continue;
      }
      await hold();
    }
  }

  /** While this process holds the lease: connect, read, reconnect. */
  async function hold(): Promise<void> {
    holding = true;
    const lost = new AbortController();
    const signal = AbortSignal.any([closing.signal, lost.signal]);
    logger.info({ holder: owner }, "pull: this worker holds the Events API connection");
    notePullMessage();
    const renewal = setInterval(() => {
      state.lease.renew(owner, leaseMs).then(
        (kept) => {
          if (!kept) {
            logger.warn({ holder: owner }, "pull: the Events API lease was lost (this worker stalled past it); another worker reads now");
            lost.abort();
          }
        },
        (error: Error) => {
          logger.warn({ err: error }, "pull: cannot renew the Events API lease (Redis unreachable); disconnecting until it can be held again");
          lost.abort();
        },
      );
    }, renewMs);
    let attempt = 0;
    try {
      while (!signal.aborted) {
        const ending = await readOnce(signal);
        if (signal.aborted) break;
        pullReconnects.inc({ reason: ending.reason });
        attempt = ending.reason === "cycled" ? 0 : connectedSince ? 1 : attempt + 1;
        connectedSince = false;
        setState(ending.reason === "cycled" ? "connecting" : "waiting");
        await wait(ending.waitMs || (ending.reason === "cycled" ? 0 : jitteredBackoff(backoffBaseMs, attempt - 1, backoffMaxMs)), signal);
      }
    } finally {
      clearInterval(renewal);
      pullConnected.set(0);
      forgetPullMessages();
      if (closing.signal.aborted) {
        await state.report("waiting", lastError).catch(() => undefined);
        await state.lease.release(owner).catch(() => undefined);
      }
      holding = false;
      if (!closing.signal.aborted) await wait(pollMs, closing.signal);
    }
  }

  /** One connection, from the kept offset, until it ends. */
  async function readOnce(signal: AbortSignal): Promise<Ending> {
    setState("connecting");
    let query: EventLogQuery;
    try {
      const position = await state.position();
      query = { eventTypes: deps.eventTypes };
      if (expired && expired.offset === position.offset) query.fromTimestamp = expired.from;
      else if (position.offset !== undefined) query.from = position.offset;
      else {
        firstStart ??= startTime(deps.start, Date.now()) ?? new Date();
        query.fromTimestamp = firstStart;
      }
    } catch (error) {
      return failed("error", `cannot read the kept pull offset from Redis: ${(error as Error).message}`, "error");
    }
    let stream;
    try {
      stream = await openEventLog({ apiBaseUrl: deps.apiBaseUrl, tenant: deps.tenant, query, signal, fetch: deps.fetch });
    } catch (error) {
      if (signal.aborted) return { reason: "error", waitMs: 0 };
      return await refused(error, query);
    }
    lastSaid = undefined;
    connectedSince = true;
    setState("connected", null);
    pullConnected.set(1);
    logger.info({ from: query.from ?? query.fromTimestamp?.toISOString() ?? "now" }, "pull: connected to the tenant's Events API");
    let idle: NodeJS.Timeout | undefined;
    const watch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => stream.close(), idleMs);
    };
    watch();
    try {
      // Up to `inFlight` messages are stored at once; their offsets are kept strictly in order,
      // each only once it and every message before it are stored.
      let stopped: Ending | undefined;
      let chain = Promise.resolve();
      const steps: Array<Promise<void>> = [];
      for await (const message of stream.messages) {
        watch();
        notePullMessage();
        if (message.event === "error") {
          await chain;
          stream.close();
          return stopped ?? failed("error", `the tenant ended the Events API stream with an error: ${message.data.slice(0, 300)}`, "warn");
        }
        const content = storeContent(message);
        content.catch(() => undefined);
        chain = chain.then(async () => {
          if (stopped) return;
          stopped = await keepAfter(content);
        });
        steps.push(chain);
        if (steps.length >= inFlight) await steps.shift();
        if (stopped) {
          stream.close();
          return stopped;
        }
        if (signal.aborted) break;
      }
      await chain;
      if (stopped) return stopped;
    } catch (error) {
      if (signal.aborted) return { reason: "error", waitMs: 0 };
      return failed("error", `the Events API connection broke: ${(error as Error).message}`, "warn");
    } finally {
      clearTimeout(idle);
      pullConnected.set(0);
    }
    // The tenant closes connections every few minutes on purpose (docs/tenant-api.md#pulling-events): reconnect at once.
    logger.debug("pull: the Events API stream ended (the tenant's periodic close); reconnecting from the kept offset");
    return { reason: "cycled", waitMs: 0 };
  }

  /** Stores one message's content (an event, or a poison kept aside); what its offset covers then. */
  async function storeContent(message: EventSourceMessage): Promise<{ offset?: string; lastEventAt?: string }> {
    let parsed: { offset?: unknown; event?: unknown } | undefined;
    try {
      parsed = JSON.parse(message.data) as typeof parsed;
    } catch {
      parsed = undefined;
    }
    const offset = message.id || (typeof parsed?.offset === "string" ? parsed.offset : undefined);
    if (message.event === "offset-only") return { offset };
    const event = readEvent(parsed);
    if (typeof event === "string") {
      await state.keepAside({ offset, reason: event, raw: message.data, at: new Date().toISOString() });
      pullEvents.inc({ result: "poison" });
      logger.error({ offset, reason: event, type: message.event }, "pull: an event that cannot be read was kept aside as a pull dead letter (its raw body is in Redis); reading goes on past it");
      return { offset };
    }
    const result = await deps.store.store(event, { origin: "pull" });
    pullEvents.inc({ result: result.status });
    return { offset, lastEventAt: event.time };
  }

  /** Keeps the offset of a stored message (called in message order); an Ending when reading must stop. */
  async function keepAfter(content: Promise<{ offset?: string; lastEventAt?: string }>): Promise<Ending | undefined> {
    try {
      const { offset, lastEventAt } = await content;
      if (offset === undefined) return undefined;
      if (!(await state.keep(owner, offset, lastEventAt))) {
        logger.warn({ holder: owner }, "pull: the Events API lease was lost while reading; the new holder resumes from the kept offset");
        return { reason: "error", waitMs: 0 };
      }
      return undefined;
    } catch (error) {
      return failed("error", `could not store a pulled event (${(error as Error).message}); reading stopped and resumes from the kept offset`, "error");
    }
  }

  /** A non-200 answer or no answer: which reason, what to say, how long to wait. */
  async function refused(error: unknown, query: EventLogQuery): Promise<Ending> {
    if (!(error instanceof TenantApiError)) return failed("error", `pull: ${(error as Error).message}`, "error");
    if (error.status === 401 || error.status === 403) {
      setState("waiting", error.message);
      // Named once per change; the metric and the backoff go on meanwhile.
      sayOnce("error", `pull: ${error.message}; retrying with backoff`, { status: error.status, operation: error.operation });
      return { reason: "auth", waitMs: 0 };
    }
    if (error.status === 410 || (error.status === 400 && query.from !== undefined)) {
      await resumeFromTime(query.from, error);
      return { reason: "expired", waitMs: 0 };
    }
    if (error.status === 429) {
      setState("waiting", error.message);
      logger.warn({ retryAfterMs: error.retryAfterMs }, `pull: ${error.message}`);
      return { reason: "rate_limited", waitMs: error.retryAfterMs ?? 0 };
    }
    return failed("error", `pull: ${error.message}`, "warn");
  }

  /** An expired (or refused) offset: read again from the last stored event's time less the overlap. */
  async function resumeFromTime(offset: string | undefined, error: TenantApiError) {
    const position = await state.position().catch(() => ({ lastEventAt: undefined }));
    const last = position.lastEventAt ? Date.parse(position.lastEventAt) : Number.NaN;
    const from = new Date((Number.isNaN(last) ? Date.now() : last) - deps.overlapMs);
    expired = { offset, from };
    setState("waiting", error.message);
    logger.warn(
      { offset, from: from.toISOString(), status: error.status },
      `pull: the kept offset can no longer be read (${error.status} ${error.tenantMessage}); resuming from ${from.toISOString()} (the last stored event's time less PULL_OVERLAP_SECONDS); the ledger drops the repeats`,
    );
  }

  function failed(reason: ReconnectReason, message: string, level: "warn" | "error"): Ending {
    setState("waiting", message);
    sayOnce(level, message);
    return { reason, waitMs: 0 };
  }

  const running = run().catch((error: unknown) => logger.error({ err: error }, "pull: stopped on an unexpected error; restart the worker"));

  return {
    local: () => ({ state: current, lastError, holding }),
    async close() {
      closing.abort();
      await running;
    },
  };
}

/** The CloudEvent of a message, or why it cannot be read. */
function readEvent(parsed: { event?: unknown } | undefined): ReturnType<typeof validateCloudEvent> | string {
  if (parsed === undefined) return "the message data is not JSON";
  try {
    return validateCloudEvent(parsed.event, "event.");
  } catch (error) {
    if (error instanceof InvalidEventError) return error.message;
    throw error;
  }
}

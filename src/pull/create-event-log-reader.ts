import { InvalidEventError } from "../events/invalid-event-error.js";
import { lastingFault } from "../events/lasting-fault.js";
import { validateCloudEvent } from "../events/validate-cloud-event.js";
import { notePullMessage, pullConnected, pullEvents } from "../metrics/pull-metrics.js";
import { openEventLog, type EventLogQuery, type EventLogMessage, type EventLogStream } from "../tenant/open-event-log.js";
import { TenantApiError } from "../tenant/tenant-api-error.js";
import { startTime } from "./pull-start.js";
import type { Logger } from "../logging/logger.js";
import type { EventStore } from "../queue/event-store.js";
import type { TenantClient } from "../tenant/create-tenant-client.js";
import type { PullState, PullStateName } from "./pull-state.js";
import type { PullStart } from "./pull-start.js";

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
  /** WEBHOOK_MAX_BODY_BYTES: a message larger than this is never held whole; it is kept aside with its first bytes. */
  maxMessageBytes: number;
  /** DEDUPE_TTL_SECONDS in ms: a resume never reads further back, where the ledger has forgotten the ids and would let repeats through. */
  dedupeTtlMs: number;
  /** Another worker takes over within this long of the holder's death. */
  failoverMs: number;
  logger: Logger;
  /** First wait after a failed connection; doubles to backoffMaxMs. @defaultValue 1000 */
  backoffBaseMs?: number;
  /** The longest wait before reconnecting, the tenant's `retry:` included. @defaultValue {@link defaultBackoffMaxMs} */
  backoffMaxMs?: number;
  /** A connection silent this long (no event, marker or comment) is dropped and made again. @defaultValue 90000 */
  idleMs?: number;
  fetch?: typeof fetch;
  /** Messages stored at once (offsets kept in order all the same). @defaultValue 32 */
  inFlight?: number;
}

/** PullerDeps.backoffMaxMs unless given: a minute. */
export const defaultBackoffMaxMs = 60_000;

/** What one connection came to: why it ended and how long to wait before the next. */
export interface Ending {
  reason: ReconnectReason;
  waitMs: number;
}

export interface EventLogReader {
  /** One connection, from the kept offset, until it ends; `connected` when it was made (the backoff starts afresh after it). */
  readOnce(signal: AbortSignal): Promise<Ending & { connected: boolean }>;
}

/**
 * One connection at a time to the tenant's event log, for the worker holding the pull
 * lease (create-puller.ts): where to read from, each message stored before its offset is
 * kept, and why a connection ended (said once per change).
 */
export function createEventLogReader(deps: PullerDeps, owner: string, setState: (next: PullStateName, error?: string | null) => void): EventLogReader {
  const { state, logger } = deps;
  const idleMs = deps.idleMs ?? 90_000;
  /** Messages stored at once; their offsets are still kept one by one, in order. */
  const inFlight = deps.inFlight ?? 32;
  const sayOnce = createSayOnce(logger);
  /** The time to read from after the kept offset expired (410), while that offset is still the kept one. */
  let expired: { offset: string | undefined; from: Date } | undefined;
  /** Set when this connection was made: the backoff starts afresh after it. */
  let connected = false;
  /** The tenant's `retry:`, the wait before reconnecting after it closed a stream on purpose. */
  let retryMs = 0;

  /** One connection, from the kept offset, until it ends. */
  async function readOnce(signal: AbortSignal): Promise<Ending> {
    setState("connecting");
    let query: EventLogQuery;
    try {
      const position = await state.position();
      query = { eventTypes: deps.eventTypes };
      if (expired && expired.offset === position.offset) query.fromTimestamp = expired.from;
      else if (position.offset !== undefined) query.from = position.offset;
      else query.fromTimestamp = position.startAt ? new Date(position.startAt) : await state.fixStart(startTime(deps.start, Date.now()) ?? new Date());
    } catch (error) {
      return failed("error", `cannot read the kept pull offset from Redis: ${(error as Error).message}`, "error");
    }
    let stream: EventLogStream | undefined;
    let idle: NodeJS.Timeout | undefined;
    const watch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => stream?.close(), idleMs);
    };
    try {
      const onRetry = (ms: number) => void (retryMs = Math.min(ms, deps.backoffMaxMs ?? defaultBackoffMaxMs));
      const onOversize = () => logger.warn({ maxMessageBytes: deps.maxMessageBytes }, "pull: a message of the Events API passed WEBHOOK_MAX_BODY_BYTES; the rest of it is read and dropped, and it is kept aside with its first bytes when it ends");
      stream = await openEventLog({ apiBaseUrl: deps.apiBaseUrl, tenant: deps.tenant, query, signal, fetch: deps.fetch, onComment: watch, onRetry, maxMessageBytes: deps.maxMessageBytes, onOversize });
    } catch (error) {
      if (signal.aborted) return { reason: "error", waitMs: 0 };
      return await refused(error, query);
    }
    sayOnce.forget();
    connected = true;
    setState("connected", null);
    pullConnected.set(1);
    logger.info({ from: query.from ?? query.fromTimestamp?.toISOString() ?? "now" }, "pull: connected to the tenant's Events API");
    watch();
    // Up to `inFlight` messages are stored at once; their offsets are kept strictly in order,
    // each only once it and every message before it are stored.
    let stopped: Ending | undefined;
    let chain = Promise.resolve();
    try {
      const steps: Array<Promise<void>> = [];
      for await (const message of stream.messages) {
        watch();
        notePullMessage();
        if (message.event === "error") {
          await chain;
          stream.close();
          return stopped ?? failed("error", `the tenant ended the Events API stream with an error: ${message.data.slice(0, 300)}`, "warn");
        }
        const content = storeMessage(deps, message);
        content.catch(() => undefined);
        chain = chain.then(async () => {
          if (stopped) return;
          stopped = await keepOffset(deps, owner, content).catch((error: Error) =>
            failed("error", `could not store a pulled event (${error.message}); reading stopped and resumes from the kept offset`, "error"),
          );
          // Now, not at the next message: on a quiet log that could be minutes away.
          if (stopped) stream.close();
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
      // Closed by a step that stopped reading: that step's reason, not a broken connection.
      await chain;
      if (stopped) return stopped;
      return failed("error", `the Events API connection broke: ${(error as Error).message}`, "warn");
    } finally {
      clearTimeout(idle);
      pullConnected.set(0);
    }
    // The tenant closes connections every few minutes on purpose (docs/tenant.md#pulling-events):
    // reconnect after the wait its `retry:` asks for.
    logger.debug({ retryMs }, "pull: the Events API stream ended (the tenant's periodic close); reconnecting from the kept offset");
    return { reason: "cycled", waitMs: retryMs };
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
      expired = await resumeFromTime(deps, query.from, error);
      setState("waiting", error.message);
      return { reason: "expired", waitMs: 0 };
    }
    if (error.status === 429) {
      setState("waiting", error.message);
      logger.warn({ retryAfterMs: error.retryAfterMs }, `pull: ${error.message}`);
      return { reason: "rate_limited", waitMs: error.retryAfterMs ?? 0 };
    }
    return failed("error", `pull: ${error.message}`, "warn");
  }

  function failed(reason: ReconnectReason, message: string, level: "warn" | "error"): Ending {
    setState("waiting", message);
    sayOnce(level, message);
    return { reason, waitMs: 0 };
  }

  return {
    async readOnce(signal) {
      connected = false;
      const ending = await readOnce(signal);
      return { ...ending, connected };
    },
  };
}

/** Stores one message's content (an event, or a poison kept aside); what its offset covers then. */
async function storeMessage(deps: Pick<PullerDeps, "state" | "store" | "logger">, message: EventLogMessage): Promise<{ offset?: string; lastEventAt?: string }> {
  if (message.oversize) {
    const reason = `a message of ${message.oversize.bytes} bytes, larger than WEBHOOK_MAX_BODY_BYTES`;
    return keepAside(deps, { ...message, data: message.oversize.head }, message.id || undefined, reason, "a message too large to store");
  }
  let parsed: { offset?: unknown; event?: unknown } | undefined;
  try {
    parsed = JSON.parse(message.data) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  const offset = message.id || (typeof parsed?.offset === "string" ? parsed.offset : undefined);
  if (message.event === "offset-only") return { offset };
  const event = readEvent(parsed);
  if (typeof event === "string") return keepAside(deps, message, offset, event, "an event that cannot be read");
  let result;
  try {
    result = await deps.store.store(event, { origin: "pull" });
  } catch (error) {
    // The event itself is refused (too deep to write, a value the store cannot take): trying
    // again would refuse it again and hold every event after it. Anything else (Redis away)
    // ends the connection, and reading resumes from the kept offset.
    const reason = lastingFault(error);
    if (reason === undefined) throw error;
    return keepAside(deps, message, offset, reason, "an event that cannot be stored");
  }
  pullEvents.inc({ result: result.status });
  return { offset, lastEventAt: event.time };
}

/** A message kept aside as a pull dead letter, counted and logged; its offset moves on. */
async function keepAside(deps: Pick<PullerDeps, "state" | "logger">, message: EventLogMessage, offset: string | undefined, reason: string, what: string): Promise<{ offset?: string }> {
  await deps.state.keepAside({ offset, reason, raw: message.data, at: new Date().toISOString() });
  pullEvents.inc({ result: "poison" });
  deps.logger.error({ offset, reason, type: message.event }, `pull: ${what} was kept aside as a pull dead letter (its raw body is in Redis); reading goes on past it`);
  return { offset };
}

/**
 * An expired (or refused) offset: read again from when the last offset was kept (our clock)
 * less the overlap. Never from an event's own `time`: the tenant's word, which may be far in
 * the past (a back-dated event would re-read the whole dedupe window and report a gap of
 * years) or in the future (it would skip the events after it).
 */
async function resumeFromTime(deps: Pick<PullerDeps, "state" | "overlapMs" | "dedupeTtlMs" | "logger">, offset: string | undefined, error: TenantApiError): Promise<{ offset: string | undefined; from: Date }> {
  const position: { offsetAt?: string } = await deps.state.position().catch(() => ({}));
  const since = Date.parse(position.offsetAt ?? "");
  const known = !Number.isNaN(since);
  const wanted = (known ? since : Date.now()) - deps.overlapMs;
  const remembered = Date.now() - deps.dedupeTtlMs;
  if (wanted < remembered) {
    // Down longer than the dedupe window: what the log holds from before it would reach
    // the routes a second time where the push delivered it. Said, with the way to recover it.
    deps.logger.error(
      { offset, skippedFrom: new Date(wanted).toISOString(), skippedTo: new Date(remembered).toISOString() },
      "pull: the kept offset is older than DEDUPE_TTL_SECONDS; the log is read from the start of the dedupe window instead, and events of the span before it are not pulled (their ids are forgotten, so reading them could deliver them twice): list that span's failed deliveries with `streamkeeper reconcile --since <when> --dry-run` and recover what the destinations lack by id",
    );
  }
  const from = new Date(Math.max(wanted, remembered));
  deps.logger.warn(
    { offset, from: from.toISOString(), status: error.status },
    `pull: the kept offset can no longer be read (${error.status} ${error.tenantMessage}); resuming from ${from.toISOString()} (${known ? "when the offset was kept" : "now, nothing kept to start from"}, less PULL_OVERLAP_SECONDS); the ledger drops the repeats`,
  );
  return { offset, from };
}

/** Keeps the offset of a stored message (called in message order); an Ending when reading must stop. Throws when the message could not be stored. */
async function keepOffset(deps: Pick<PullerDeps, "state" | "logger">, owner: string, content: Promise<{ offset?: string; lastEventAt?: string }>): Promise<Ending | undefined> {
  const { offset, lastEventAt } = await content;
  if (offset === undefined) return undefined;
  if (!(await deps.state.keep(owner, offset, lastEventAt))) {
    deps.logger.warn({ holder: owner }, "pull: the Events API lease was lost while reading; the new holder resumes from the kept offset");
    return { reason: "error", waitMs: 0 };
  }
  return undefined;
}

/** A failure that repeats is said once per change (auth, tenant down); the metric counts each. */
function createSayOnce(logger: Logger) {
  let lastSaid: string | undefined;
  const sayOnce = (level: "warn" | "error", message: string, fields: Record<string, unknown> = {}) => {
    // The same failure again (the tenant still down, still refusing): said at debug only.
    const key = message.replace(/\d+ ms/g, "");
    if (key === lastSaid) logger.debug(fields, message);
    else logger[level](fields, message);
    lastSaid = key;
  };
  /** A connection was made: the next failure is news. */
  return Object.assign(sayOnce, { forget: () => void (lastSaid = undefined) });
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

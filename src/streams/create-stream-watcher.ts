import type { Cluster, Redis } from "ioredis";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "../logging/logger.js";
import { streamAutoEnables, streamWatchRuns } from "../metrics/registry.js";
import { createRepeatLog, type RepeatLog } from "../logging/repeat-log.js";
import { settlesWithin } from "../time/settles-within.js";
import type { EventStream } from "../tenant/event-stream.js";
import { nextAutoEnableAt, streakAfterEnabledCheck } from "./auto-enable-backoff.js";
import { registerStreamGauges } from "./register-stream-gauges.js";
import { createStreamHealthStore, type StreamHealth } from "./stream-health-store.js";
import { sweepVerdict, type SweepScope } from "./swept-streams.js";

export interface StreamWatcherOptions {
  /** Every stream of the tenant with its status: one `GET /event-streams?take=100` per 100 streams, paced with the reconciler. */
  listStreams(): AsyncIterable<EventStream>;
  /** `PATCH /event-streams/{id}` `{"status":"enabled"}`; answers the stream as the tenant returned it. */
  enableStream(streamId: string): Promise<EventStream>;
  /** This service's own readiness to store events (the check behind /readyz). */
  ready(): Promise<boolean>;
  /** Which streams are ours (swept-streams.ts). */
  scope: SweepScope;
  /** Shared state and the one-check-per-interval claim (the service's fail-fast connection). */
  redis: Redis | Cluster;
  queuePrefix: string;
  logger: Logger;
  /** STREAM_WATCH_INTERVAL_SECONDS in ms. */
  intervalMs: number;
  /** STREAM_AUTO_ENABLE */
  autoEnable: boolean;
  /** How often readiness is asked while a disabled stream waits for it. @defaultValue 1000 */
  readyPollMs?: number;
  /** LOG_REPEAT_INTERVAL_SECONDS in ms: a stream that stays disabled is said at once, then once per this with a count. */
  logRepeatsEveryMs: number;
  /** The longest close() waits for a check in flight. @defaultValue 5000 */
  shutdownTimeoutMs?: number;
}

export interface StreamWatcher {
  close(): Promise<void>;
}

/**
 * Reads the status of every swept stream every interval (README.md#stream-health),
 * so a stream the tenant disabled (500 consecutive failed deliveries, docs/tenant.md#webhook-delivery) is
 * seen within an interval: `streamkeeper_stream_enabled{stream}` and an error log, since
 * the tenant keeps nothing of what it would have sent meanwhile. With `autoEnable` it is
 * enabled again as soon as this service can store events, backing off when the tenant
 * disables it again (auto-enable-backoff.ts).
 *
 * One check per interval across every worker process: a Redis claim that expires with
 * the interval (stream-health-store.ts). Chosen over a BullMQ job scheduler because it
 * needs no queue, worker connections or job retention for a once-a-minute read, and a
 * killed process holds nothing longer than one interval. Whoever checks writes the
 * findings to Redis, so every worker's /metrics shows the same values.
 */
export function createStreamWatcher(options: StreamWatcherOptions): StreamWatcher {
  const { logger, intervalMs, scope } = options;
  const readyPollMs = options.readyPollMs ?? 1000;
  const store = createStreamHealthStore(options.redis, options.queuePrefix, intervalMs);
  const unregisterGauges = registerStreamGauges(store, intervalMs, options.autoEnable);
  const stop = new AbortController();
  /** Named streams already reported missing, so the log says it once per process. */
  const reportedMissing = new Set<string>();
  const logDisabled = createDisabledLog(logger, options.autoEnable, options.logRepeatsEveryMs);

  async function check(): Promise<void> {
    const claimedAt = Date.now();
    const streams: EventStream[] = [];
    for await (const stream of options.listStreams()) streams.push(stream);
    for (const id of scope.streamIds ?? []) {
      if (!streams.some((stream) => stream.id === id) && !reportedMissing.has(id)) {
        reportedMissing.add(id);
        logger.error({ streamId: id }, "stream watch: a stream named in RECONCILE_SWEEP_STREAMS does not exist on the tenant; fix or remove the id");
      }
    }
    const known = await store.read();
    const found = new Map<string, StreamHealth>();
    for (const stream of streams.filter((each) => sweepVerdict(each, scope).swept)) {
      const before = known.get(stream.id);
      const streak = { enables: before?.enables ?? 0, lastEnabledAt: before?.lastEnabledAt ?? 0 };
      if (stream.status === "enabled") {
        if (before?.status === "disabled") logger.info({ streamId: stream.id }, "stream is enabled again");
        found.set(stream.id, { status: "enabled", checkedAt: claimedAt, ...streakAfterEnabledCheck(streak, claimedAt) });
      } else {
        // Every check while it stays disabled: at once, then once per LOG_REPEAT_INTERVAL_SECONDS with a count.
        logDisabled(stream);
        found.set(stream.id, { status: "disabled", checkedAt: claimedAt, ...streak });
      }
    }
    // Written before any auto-enable, so the 0 shows even while enabling waits for readiness.
    await store.write(found);
    if (!options.autoEnable) return;
    let enabled = false;
    for (const [streamId, health] of found) {
      if (health.status === "disabled" && (await autoEnable(streamId, health, claimedAt + intervalMs))) enabled = true;
    }
    if (enabled) await store.write(found);
  }

  /** Enables one disabled stream when its backoff allows and this service can store events; true when it did. */
  async function autoEnable(streamId: string, health: StreamHealth, deadline: number): Promise<boolean> {
    const notBefore = nextAutoEnableAt(health, intervalMs);
    if (Date.now() < notBefore) {
      logger.warn(
        { streamId, autoEnables: health.enables, nextAt: new Date(notBefore).toISOString() },
        "stream watch: the tenant disabled the stream again after it was auto-enabled; backing off before enabling it again (its endpoint probably still fails: check the webhook alerts)",
      );
      return false;
    }
    if (!(await readyBy(deadline))) {
      logger.warn({ streamId }, "stream watch: not enabling the disabled stream while this service cannot store events (Redis); enabling it once it can");
      return false;
    }
    try {
      const stream = await options.enableStream(streamId);
      Object.assign(health, { status: stream.status, enables: health.enables + 1, lastEnabledAt: Date.now() });
    } catch (error) {
      // E.g. a 403: the client lacks update:event_streams (the error names the scope).
      logger.error({ err: error, streamId }, `stream watch: could not enable the disabled stream; fix what the error says, or enable it by hand: streamkeeper streams update ${streamId} --status enabled`);
      return false;
    }
    streamAutoEnables.inc({ stream: streamId });
    logger.warn(
      { streamId, autoEnables: health.enables },
      "stream was disabled; enabled it again (STREAM_AUTO_ENABLE=true): events the tenant had while it was disabled are lost, its failed deliveries are swept",
    );
    return true;
  }

  /** Asks readiness until it is true or `deadline` (the end of this interval's claim) passes. */
  async function readyBy(deadline: number): Promise<boolean> {
    for (;;) {
      if (await options.ready()) return true;
      if (Date.now() + readyPollMs > deadline || stop.signal.aborted) return false;
      await sleep(readyPollMs, undefined, { signal: stop.signal }).catch(() => undefined);
    }
  }

  async function run(): Promise<void> {
    /** Failures in a row: the first is logged at warn, the rest at debug (a Redis outage would log every second). */
    let failures = 0;
    while (!stop.signal.aborted) {
      let waitMs: number;
      try {
        waitMs = await store.claim();
        if (waitMs === 0) {
          await check();
          streamWatchRuns.inc({ result: "ok" });
          if (failures > 0) logger.info({ failures }, "stream watch: reading the streams' status works again");
          failures = 0;
          // The next claim answers what is left of this interval: checks keep their pace however long one took.
          continue;
        }
      } catch (error) {
        if (stop.signal.aborted) return;
        streamWatchRuns.inc({ result: "error" });
        logger[failures++ === 0 ? "warn" : "debug"]({ err: error }, "stream watch: could not read the streams' status; trying again (check the tenant settings and Redis)");
        // Soon, so a stream disabled during a Redis outage is enabled as soon as Redis is back;
        // the claim of a check that failed at the tenant still holds, so this costs the tenant nothing.
        waitMs = Math.min(intervalMs, 1000);
      }
      // A little spread, so the workers waiting for a claim do not all ask at the same instant.
      await sleep(waitMs + Math.floor(Math.random() * 50), undefined, { signal: stop.signal }).catch(() => undefined);
    }
  }

  const running = run();
  logger.info({ intervalSeconds: intervalMs / 1000, autoEnable: options.autoEnable, scope }, "stream watch started");

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        stop.abort();
        await settlesWithin(running, options.shutdownTimeoutMs ?? 5000);
        unregisterGauges();
      })();
      return closing;
    },
  };
}

/** One repeat log per disabled stream, so its line names the command that enables it. */
function createDisabledLog(logger: Logger, autoEnable: boolean, everyMs: number): (stream: EventStream) => void {
  const disabledLogs = new Map<string, RepeatLog>();
  return (stream) => {
    let log = disabledLogs.get(stream.id);
    if (!log) {
      log = createRepeatLog(
        logger,
        "error",
        `stream is disabled: the tenant sends it no events and keeps none, so every event meanwhile is lost for good (the sweep cannot bring them back); enable it: streamkeeper streams update ${stream.id} --status enabled${autoEnable ? " (STREAM_AUTO_ENABLE does, once its backoff allows and this service can store events)" : ", or set STREAM_AUTO_ENABLE=true"}`,
        everyMs,
      );
      disabledLogs.set(stream.id, log);
    }
    log({ streamId: stream.id, stream: stream.name });
  };
}

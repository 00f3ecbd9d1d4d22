import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { forgetPullMessages, notePullMessage, pullConnected, pullReconnects } from "../metrics/pull-metrics.js";
import { jitteredBackoff } from "../time/retry-after.js";
import { createEventLogReader, defaultBackoffMaxMs, type PullerDeps } from "./create-event-log-reader.js";
import type { PullStateName } from "./pull-state.js";

export type { Ending, PullerDeps, ReconnectReason } from "./create-event-log-reader.js";

export interface Puller {
  /** This process's view: its state and last error (GET /admin/pull reads Redis for every process's). */
  local(): { state: PullStateName; lastError: string | null; holding: boolean };
  close(): Promise<void>;
}


/**
 * Reads the tenant's Events API (docs/tenant.md#pulling-events) into the event store.
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
  const backoffMaxMs = deps.backoffMaxMs ?? defaultBackoffMaxMs;
  const closing = new AbortController();
  let current: PullStateName = "waiting";
  let lastError: string | null = null;
  let holding = false;
  const setState = (next: PullStateName, error: string | null = lastError) => {
    current = next;
    lastError = error;
    if (holding) void state.report(next, error).catch(() => undefined);
  };

  const reader = createEventLogReader(deps, owner, setState);
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
        const ending = await reader.readOnce(signal);
        if (signal.aborted) break;
        pullReconnects.inc({ reason: ending.reason });
        attempt = ending.reason === "cycled" ? 0 : ending.connected ? 1 : attempt + 1;
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

  const running = run().catch((error: unknown) => logger.error({ err: error }, "pull: stopped on an unexpected error; restart the worker"));

  return {
    local: () => ({ state: current, lastError, holding }),
    async close() {
      closing.abort();
      await running;
    },
  };
}

import { randomUUID } from "node:crypto";
import type { Env } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { sweepFailedDeliveries, sweepRuns } from "../metrics/registry.js";
import type { PacedTenant } from "../pace/create-paced-tenant.js";
import type { Reconciler } from "../reconcile/create-reconciler.js";
import { settlesWithin } from "../time/settles-within.js";
import { sweepPlan } from "../streams/swept-streams.js";
import type { SweepState } from "./create-sweep-state.js";
import { listSweptStreams } from "./list-swept-streams.js";
import { sweepWindow } from "./sweep-window.js";

type SweepEnv = Pick<
  Env,
  "RECONCILE_SWEEP_INTERVAL_SECONDS" | "RECONCILE_SWEEP_LOOKBACK_SECONDS" | "RECONCILE_SWEEP_OVERLAP_SECONDS" | "RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS" | "RECONCILE_SWEEP_STREAMS" | "PUBLIC_URL" | "DEDUPE_TTL_SECONDS"
>;

export interface SweeperOptions {
  env: SweepEnv;
  tenant: PacedTenant;
  reconciler: Pick<Reconciler, "reconcileRecord" | "assessRecord">;
  state: SweepState;
  /** Whether an event is here now (the ledger): an unrecovered id that arrived since is no longer counted. */
  arrived(eventId: string): Promise<boolean>;
  logger: Logger;
}

export interface Sweeper {
  /** Stops sweeping; a sweep in progress stops after its current page and gives the lease back. */
  close(): Promise<void>;
}

/** Longest window: a first sweep over a day reads 24 windows, each checkpointed, so a crash costs an hour of re-reading at most. */
const maxWindowMs = 3_600_000;

/** A sweep stopped between pages: the lease was lost, or the process is shutting down. Not a failed run. */
class Interrupted extends Error {}

/**
 * Finds the tenant's failed deliveries with no one asking (README.md#the-sweep-failed-deliveries-found-without-being-told). Every RECONCILE_SWEEP_INTERVAL_SECONDS, for each swept
 * stream, it reads windows from the stream's checkpoint (less RECONCILE_SWEEP_OVERLAP_SECONDS)
 * up to now, and recovers each failed delivery from the list's own records.
 *
 * One sweeper at a time across processes: a Redis lease, renewed while a sweep runs, and
 * a "not before" key that spaces sweeps by the interval whichever process runs them. Why
 * a lease and not a BullMQ job scheduler: the sweep's progress lives in the per-stream
 * checkpoints, not in a job, so a crashed sweep needs no job to be recovered, only the
 * lease to expire (at most 3 intervals, 5 to 60 s), after which any process sweeps on from
 * the checkpoints; and a stalled job would be run again while its first run may still be
 * going (a paused process), where every checkpoint write here is fenced by the lease.
 */
export function createSweeper(options: SweeperOptions): Sweeper {
  const { env, logger, state, reconciler } = options;
  const intervalMs = env.RECONCILE_SWEEP_INTERVAL_SECONDS * 1000;
  const { tenant } = options;
  const plan = sweepPlan(env, !("unavailable" in tenant));
  // Off: said once at start, with the settings to set, by report-what-is-off.ts.
  if (!plan.on || "unavailable" in tenant) return { close: async () => {} };
  const { scope } = plan;
  const client = tenant.client;

  const owner = randomUUID();
  const leaseMs = Math.min(60_000, Math.max(5000, 3 * intervalMs));
  const lookbackMs = env.RECONCILE_SWEEP_LOOKBACK_SECONDS * 1000;
  const overlapMs = env.RECONCILE_SWEEP_OVERLAP_SECONDS * 1000;
  const deepIntervalMs = env.RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS * 1000;
  const dedupeTtlMs = env.DEDUPE_TTL_SECONDS * 1000;
  let closed = false;
  let running: Promise<void> | undefined;
  let lastStreams: string | undefined;

  async function sweepIfDue(): Promise<void> {
    if (!(await state.acquire(owner, leaseMs, intervalMs))) return;
    let lost = false;
    const renewal = setInterval(() => {
      state.renew(owner, leaseMs).then(
        (ours) => void (lost ||= !ours),
        (error: unknown) => logger.warn({ err: error }, "sweep: cannot renew the lease (Redis); the sweep stops if another process takes it"),
      );
    }, leaseMs / 3);
    // A sweep in progress must not hold the process open on its own.
    renewal.unref();
    try {
      await sweepAll(() => {
        if (lost) throw new Interrupted("the lease was lost mid-sweep (another process sweeps now); stopped");
        if (closed) throw new Interrupted("shutting down; the next sweep reads on from the checkpoints");
      });
    } finally {
      clearInterval(renewal);
      await state.release(owner).catch(() => {});
    }
  }

  async function sweepAll(check: () => void): Promise<void> {
    let streamIds: string[];
    try {
      streamIds = await listSweptStreams(client, scope);
    } catch (error) {
      logger.error({ err: error }, "sweep: cannot list the tenant's streams to find the swept ones; trying again next interval");
      return;
    }
    await state.retain(streamIds);
    const shown = streamIds.join(",");
    if (shown !== lastStreams) {
      lastStreams = shown;
      if (streamIds.length === 0) logger.warn({ publicUrl: scope.publicUrl }, "sweep: no stream of the tenant points at PUBLIC_URL; run `streamkeeper streams connect <stream-id>` or set RECONCILE_SWEEP_STREAMS");
      else logger.info({ streams: streamIds }, "sweep: the swept streams");
    }
    for (const streamId of streamIds) {
      check();
      await sweepStream(streamId, check);
    }
  }

  async function sweepStream(streamId: string, check: () => void): Promise<void> {
    const started = Date.now();
    const end = wholeSecond(started);
    try {
      const checkpoint = await state.checkpoint(streamId);
      // The whole lookback again now and then: a delivery the tenant fails later than the
      // overlap after its event's time (the time its list filters on) is behind the
      // checkpoint for good. Its list calls go at the same pace as every other call.
      const deep = checkpoint !== undefined && deepIntervalMs > 0 && started - ((await state.deepPassAt(streamId)) ?? 0) >= deepIntervalMs && saidDeep(logger, streamId, lookbackMs);
      let from = await sweepStart({ logger, state, streamId, checkpoint, deep, started, end, lookbackMs, overlapMs, dedupeTtlMs });
      let pages = 0;
      let found = 0;
      let recovered = 0;
      while (from < end) {
        const to = Math.min(end, from + maxWindowMs);
        const figures = await sweepWindow({ tenant: client, reconciler, streamId, from: new Date(from), to: new Date(to), afterPage: async () => check() });
        pages += figures.pages;
        const fresh = await state.noteOutcomes(streamId, figures, Date.now());
        if (figures.unrecovered.length > 0) logSetAside(logger, streamId, figures, fresh, from, to);
        for (const span of figures.unlisted) logger.error({ streamId, ...span }, `sweep: ${span.reason}`);
        found += fresh;
        recovered += figures.recovered.length;
        sweepFailedDeliveries.inc({ stream: streamId }, fresh);
        if (!(await state.advance(owner, streamId, to))) throw new Interrupted("the lease was lost mid-sweep (another process sweeps now); stopped");
        from = to;
      }
      if (deep) await state.noteDeepPass(streamId, started);
      // Last, after the windows (the overlap reads a record set aside before once more).
      const arrivedSince = await state.dropArrived(streamId, options.arrived);
      if (arrivedSince > 0) logger.info({ streamId, arrivedSince }, "sweep: failed deliveries set aside earlier are here now (recovered by id, redelivered or pulled); no longer counted as unrecovered");
      await state.noteRun(streamId, Date.now());
      sweepRuns.inc({ stream: streamId, result: "ok" });
      logger[found > 0 || recovered > 0 ? "info" : "debug"]({ streamId, pages, found, recovered, deep, ms: Date.now() - started }, "sweep: stream read up to now");
    } catch (error) {
      if (error instanceof Interrupted) throw error;
      sweepRuns.inc({ stream: streamId, result: "error" });
      const message = error instanceof Error ? error.message : String(error);
      await state.noteRun(streamId, Date.now(), message).catch(() => {});
      logger.warn({ err: error, streamId }, "sweep: stopped for this stream; its checkpoint stays at the last window read completely, and the next sweep reads on from there");
    }
  }

  // Said once per outage, not at every tick while Redis is away.
  let redisAway = false;
  function tick() {
    if (closed || running) return;
    running = sweepIfDue()
      .then(() => {
        if (redisAway) logger.info("sweep: Redis answers again; sweeping on from the checkpoints");
        redisAway = false;
      })
      .catch((error: unknown) => {
        if (error instanceof Interrupted) return logger.warn(`sweep: ${error.message}`);
        if (!redisAway) logger.warn({ err: error }, "sweep: cannot take the sweep lease (Redis unreachable?); trying again every tick");
        redisAway = true;
      })
      .finally(() => (running = undefined));
  }

  logger.info({ intervalSeconds: env.RECONCILE_SWEEP_INTERVAL_SECONDS, streams: scope.streamIds, publicUrl: scope.publicUrl }, "sweep: finding failed deliveries every interval");
  // Checked often, run when due: the "not before" key, not this timer, sets the pace.
  const timer = setInterval(tick, Math.min(15_000, Math.max(200, intervalMs / 4)));
  tick();

  return {
    async close() {
      closed = true;
      clearInterval(timer);
      if (running) await settlesWithin(running, 5000);
    },
  };
}

/**
 * Where a stream with a checkpoint reads on from: the checkpoint, so a downtime longer than
 * the lookback skips nothing (the lookback is for the first sweep only). Bounded by
 * DEDUPE_TTL_SECONDS: an event older than that may have been received and forgotten, and
 * would be delivered twice; that part is said, with the command that reads it on purpose.
 */
function resumeFrom(logger: Logger, dedupeTtlMs: number, streamId: string, wanted: number, end: number): number {
  const earliest = end - dedupeTtlMs;
  if (wanted >= earliest) return wanted;
  const skippedFrom = new Date(wholeSecond(wanted)).toISOString();
  const skippedTo = new Date(wholeSecond(earliest)).toISOString();
  logger.warn(
    { streamId, skippedFrom, skippedTo },
    `sweep: the checkpoint is older than DEDUPE_TTL_SECONDS, so ${skippedFrom} to ${skippedTo} is not swept: ids that old are forgotten, and one received then would be delivered twice; list its failed deliveries with \`streamkeeper reconcile --since ${skippedFrom} --until ${skippedTo} --stream ${streamId} --dry-run\`, and recover those the destination lacks with \`streamkeeper reconcile <event-id>...\``,
  );
  return earliest;
}

/** Warned when something new is set aside; a record already counted, read again in the overlap, is only debug. */
function logSetAside(logger: Logger, streamId: string, figures: { unrecovered: string[]; reasons: Record<string, string> }, fresh: number, from: number, to: number): void {
  const sample = figures.unrecovered.slice(0, 5).map((eventId) => ({ eventId, reason: figures.reasons[eventId] }));
  logger[fresh > 0 ? "warn" : "debug"](
    { streamId, unrecovered: figures.unrecovered.length, newlyFound: fresh, sample, from: new Date(from).toISOString(), to: new Date(to).toISOString() },
    "sweep: failed deliveries that cannot be recovered were set aside (GET /admin/sweep lists them with their reasons, tenant_unrecovered_deliveries counts them); the sweep goes on",
  );
}

function wholeSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

/**
 * Where a stream's sweep reads from: the lookback for a first sweep, else the checkpoint
 * less the overlap; a deep pass, never later than the checkpoint says, so one after a
 * downtime longer than the lookback still reads all of it.
 */
async function sweepStart(at: { logger: Logger; state: SweepState; streamId: string; checkpoint: number | undefined; deep: boolean; started: number; end: number; lookbackMs: number; overlapMs: number; dedupeTtlMs: number }): Promise<number> {
  const { checkpoint, end, lookbackMs, dedupeTtlMs } = at;
  // A first sweep is a deep pass from its start: a process taking over midway reads on from the checkpoint.
  if (checkpoint === undefined) await at.state.noteDeepPass(at.streamId, at.started);
  const resumed = checkpoint === undefined ? end - lookbackMs : resumeFrom(at.logger, dedupeTtlMs, at.streamId, checkpoint - at.overlapMs, end);
  return wholeSecond(at.deep ? Math.min(resumed, Math.max(end - lookbackMs, end - dedupeTtlMs)) : resumed);
}

/** Says that a deep pass begins; true, so it reads as part of the decision. */
function saidDeep(logger: Logger, streamId: string, lookbackMs: number): true {
  logger.info({ streamId, lookbackSeconds: lookbackMs / 1000 }, "sweep: a deep pass reads the stream's whole lookback again (RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS)");
  return true;
}

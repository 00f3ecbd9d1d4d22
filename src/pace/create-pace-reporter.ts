import type { Logger } from "../logging/logger.js";
import { mgmtApiPaceCuts, mgmtApiPacePerSecond } from "../metrics/pace-metrics.js";
import type { PaceStep } from "./create-call-pacer.js";
import type { PaceEvidence, PaceLimit } from "./read-pace-evidence.js";

export interface PaceReporter {
  /** After every API answer: the metric always, the log only when the pace changes its mind. */
  onPace(step: PaceStep, evidence: PaceEvidence): void;
  /** A hold: worth a warning when long (a 429, an empty bucket), debug when a short wait. */
  onHold(ms: number, evidence: PaceEvidence): void;
}

const limitWords: Record<PaceLimit, string> = {
  bucket: "our share of the tenant's bucket (RECONCILE_RATE_SHARE of X-RateLimit-Limit a second, or its refill when slower)",
  quota: "our client's quota (Auth0-RateLimit)",
  cap: "RECONCILE_RATE_PER_SECOND",
};

/**
 * `streamkeeper_mgmt_api_pace_per_second{limit}` and one log line per change of mind: the
 * limit that binds changed, the pace was cut (and why), it grows again after a cut, it
 * reached its ceiling. Never a line per call.
 */
export function createPaceReporter(logger: Logger): PaceReporter {
  let limit: PaceLimit | undefined;
  let phase: "growing" | "at ceiling" | "cut" = "growing";
  /** The ceiling last said to be reached: a slow bucket's refill, read from each answer, moves a little between answers (read-pace-evidence.ts). */
  let reachedSaid: number | undefined;
  const round = (perSecond: number) => Math.round(perSecond * 10) / 10;
  return {
    onPace(step, evidence) {
      const { ceiling } = evidence;
      if (ceiling && ceiling.limit !== limit) {
        mgmtApiPacePerSecond.reset();
        logger.info({ limit: ceiling.limit, ceilingPerSecond: round(ceiling.perSecond), pacePerSecond: round(step.perSecond) }, `pacing tenant calls by ${limitWords[ceiling.limit]}`);
        limit = ceiling.limit;
      }
      if (limit) mgmtApiPacePerSecond.set({ limit }, step.perSecond);
      const fields = { limit, pacePerSecond: round(step.perSecond), ceilingPerSecond: ceiling && round(ceiling.perSecond) };
      if (step.step === "cut") {
        mgmtApiPaceCuts.inc({ reason: evidence.verdict === "refused" ? "rate_limited" : "short" });
        const line = `cutting the pace of tenant calls: ${evidence.reason}`;
        if (evidence.verdict === "refused") logger.warn(fields, line);
        else logger.info(fields, line);
        phase = "cut";
        reachedSaid = undefined;
      } else if (step.step === "grew" && phase === "cut") {
        logger.info(fields, "the tenant shows room again; growing the pace of tenant calls");
        phase = "growing";
      }
      if (ceiling && phase !== "at ceiling" && step.step !== "cut" && step.perSecond >= ceiling.perSecond * 0.999) {
        if (reachedSaid === undefined || Math.abs(ceiling.perSecond - reachedSaid) > 0.25 * reachedSaid) {
          logger.info(fields, "the pace of tenant calls reached its ceiling");
          reachedSaid = ceiling.perSecond;
        }
        phase = "at ceiling";
      } else if (phase === "at ceiling" && ceiling && step.perSecond < ceiling.perSecond * 0.999) phase = "growing";
    },
    onHold(ms, evidence) {
      if (ms >= 1000) logger.warn({ holdMs: ms, reason: evidence.reason }, "tenant rate limit reached; holding our tenant calls until it refills");
      else logger.debug({ holdMs: ms, reason: evidence.reason }, "holding our tenant calls for a moment");
    },
  };
}

import type { CallPacer, PaceStep } from "./create-call-pacer.js";
import { readPaceEvidence, type PaceEvidence } from "./read-pace-evidence.js";

export interface PacedFetchOptions {
  pacer: CallPacer;
  /** Answers from under this root carry the API's rate-limit headers (the token endpoint has its own). */
  apiBaseUrl: string;
  /** Longest hold we take from the tenant's headers, so a bad clock cannot stall us. @defaultValue 60000 */
  maxHoldMs?: number;
  /** RECONCILE_RATE_SHARE: the part of the tenant's bucket we may spend. @defaultValue 1 */
  share?: number;
  /** RECONCILE_RATE_PER_SECOND, when set. */
  capPerSecond?: number;
  /** Told of every hold, e.g. to pause the BullMQ queue. */
  onHold?(ms: number, evidence: PaceEvidence): void;
  /** Told of the pace after every API answer, with the evidence that moved it. */
  onPace?(step: PaceStep, evidence: PaceEvidence): void;
  /** @defaultValue the global fetch */
  fetch?: typeof fetch;
}

/**
 * A `fetch` for the tenant client (its `fetch` option) that reads every API answer as
 * evidence for the pace (the client takes the pacer's slot before each attempt, its
 * `beforeRequest`, so the wait does not spend the attempt's timeout), the pace
 * every process shares (read-pace-evidence.ts): room grows it toward the tightest limit
 * shown, a shrinking room or a 429 cuts it; on a 429 or an empty bucket or quota every
 * process holds its calls until the tenant's `Retry-After` / `X-RateLimit-Reset`
 * (docs/tenant.md#rate-limits).
 */
export function pacedFetch(options: PacedFetchOptions): typeof fetch {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const maxHoldMs = options.maxHoldMs ?? 60_000;
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.startsWith(options.apiBaseUrl)) {
      const evidence = readPaceEvidence(response, {
        share: options.share ?? 1,
        capPerSecond: options.capPerSecond,
        pacePerSecond: options.pacer.ratePerSecond(),
        now: Date.now(),
      });
      if (evidence.holdMs > 0) {
        const ms = Math.min(evidence.holdMs, maxHoldMs);
        await options.pacer.holdFor(ms);
        options.onHold?.(ms, evidence);
      }
      const step = await options.pacer.note(evidence);
      options.onPace?.(step, evidence);
    }
    return response;
  };
}

/**
 * The retry arithmetic shared by every client of ours that retries over HTTP: the
 * downstream delivery (src/dispatch) and the tenant API client (src/tenant).
 */

/** `Retry-After` as milliseconds from now: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date names its day and month; Date.parse alone would take "-5" or "1.5" for dates.
  const date = /[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * Exponential backoff with "equal jitter": between half and all of base * 2^exponent,
 * capped at `maxMs`, so the retries of a burst spread out instead of landing together.
 */
export function jitteredBackoff(baseMs: number, exponent: number, maxMs: number, random = Math.random()): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, exponent));
  return Math.round(ceiling * (0.5 + random / 2));
}

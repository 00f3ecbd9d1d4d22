/** Socket-level codes of a Redis that cannot be reached (down, restarting, network cut). */
const unreachableCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE", "ENOENT"]);

/** What ioredis and Redis say while Redis cannot serve: its own words, matched at their start or whole. */
const unreachableMessages = [
  /^Stream isn't writeable/,
  /^Connection is closed/,
  /^Command timed out/,
  /^Reached the max retries per request limit/,
  /^Socket closed unexpectedly/,
  /^connect ETIMEDOUT/,
  /^LOADING /,
  /^CLUSTERDOWN/,
  /^None of startup nodes is available/,
  /^Failed to refresh slots cache/,
];

/**
 * True for an error that only says Redis cannot be reached right now: an expected
 * condition, said once when it starts (watch-redis-reachability.ts), not a fault in this
 * service, so it is never logged with a stack. Anything else is a fault and keeps its stack.
 */
export function isRedisUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && unreachableCodes.has(code)) return true;
  if (unreachableMessages.some((pattern) => pattern.test(error.message))) return true;
  // ioredis wraps the last connection error of a command that ran out of retries.
  const { lastNodeError, cause } = error as { lastNodeError?: unknown; cause?: unknown };
  return lastNodeError !== undefined || cause !== undefined ? isRedisUnreachable(lastNodeError ?? cause) : false;
}

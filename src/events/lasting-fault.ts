import { InvalidEventError } from "./invalid-event-error.js";

/**
 * Why storing an event failed for a reason that will not change by trying again (the
 * event itself: too deep to write, an id or a value the store refuses), as an outcome's
 * reason; undefined for a fault that may pass (Redis away, a timeout), which the caller
 * retries. Errors of the JavaScript runtime come from the value, never from the network.
 */
export function lastingFault(error: unknown): string | undefined {
  if (error instanceof InvalidEventError) return error.detail;
  if (error instanceof RangeError || error instanceof TypeError || error instanceof SyntaxError || error instanceof URIError) {
    return `${error.name}: ${error.message}`;
  }
  return undefined;
}

/**
 * An attempt that may succeed later (408, 429, 5xx, no answer). BullMQ retries the job
 * and hands this error to the worker's backoff strategy, which reads the downstream's
 * `Retry-After` from it.
 */
export class RetryableDeliveryError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "RetryableDeliveryError";
  }
}

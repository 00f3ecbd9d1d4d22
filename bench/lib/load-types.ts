/** What one load run does; passed as JSON to the load process by `runLoad`. */
export interface LoadOptions {
  /** e.g. `http://127.0.0.1:41234/webhooks/est_...` */
  url: string;
  connections: number;
  durationS: number;
  /**
   * Requests per second over all connections; unset: as fast as they go (autocannon).
   * With autocannon (`overallRate`) each connection sends its share of a second back to
   * back at the start of each second: bursts of `connections` concurrent requests.
   */
  overallRate?: number;
  /** With `overallRate`: send evenly spaced requests (one every 1/rate s) instead of autocannon's bursts. */
  paced?: boolean;
  /** 1: one structured event per request; more: a batch (application/cloudevents-batch+json) */
  batchSize: number;
  /** the Authorization header value, if any */
  authorization?: string;
  streamId: string;
  /** processes whose CPU use to report for the run, by name (e.g. the service, Redis) */
  watch?: Record<string, number>;
}

export interface LoadResult {
  generator: "autocannon" | "paced";
  durationS: number;
  /** responses received */
  responses: number;
  ok: number;
  /** non-2xx answers plus connection errors and timeouts */
  errors: number;
  statusCodes: Record<string, number>;
  requestsPerSecond: number;
  /** events acknowledged per second (2xx responses x batch size) */
  eventsPerSecond: number;
  eventsAcknowledged: number;
  /** answer time of 2xx requests; paced runs count from each request's scheduled send time */
  latencyMs: { p50?: number; p99?: number; max?: number };
  /** paced runs: how late the generator itself sent requests (send time minus due time), part of `latencyMs` */
  sendLagMs?: { p50?: number; p99?: number; max?: number };
  startedAt: number;
  finishedAt: number;
  /** cores kept busy on average during the run: the load generator and each watched process */
  cores: Record<string, number>;
}

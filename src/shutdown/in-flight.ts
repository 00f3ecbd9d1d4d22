/** What a worker is doing right now: the count of its processor calls still running. */
export interface InFlight {
  /** Wraps a job processor so each call counts while it runs. */
  track<A extends unknown[], R>(work: (...args: A) => Promise<R>): (...args: A) => Promise<R>;
  /** Processor calls running now. */
  count(): number;
}

/**
 * Counts running processor calls. A shutdown reads it to know what it waits for: BullMQ's
 * `close()` also waits for Redis round trips, which never end while Redis is away, so its
 * promise alone cannot tell "a delivery is running" from "Redis does not answer".
 */
export function createInFlight(): InFlight {
  let running = 0;
  return {
    track(work) {
      return async (...args) => {
        running++;
        try {
          return await work(...args);
        } finally {
          running--;
        }
      };
    },
    count: () => running,
  };
}

import { randomBytes } from "node:crypto";

const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one host. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export interface EventSource {
  /** A fresh real-shaped id: `evt_` + 22 base58 characters (docs/tenant.md#identifiers). */
  nextId(): string;
  /** One `user.updated` CloudEvent as the tenant pushes it, carrying its send time (default: now) for the sink. */
  event(streamId: string, sentAt?: number): Record<string, unknown>;
}

/**
 * Events for load runs. Ids are a random 8-character prefix per process plus a counter,
 * so they are unique across every load process of a run without any coordination.
 */
export function createEventSource(): EventSource {
  const prefix = Array.from(randomBytes(8), (byte) => base58[byte % 58]).join("");
  let counter = 0;
  const nextId = () => {
    let n = counter++;
    let digits = "";
    for (let i = 0; i < 14; i++) {
      digits = base58[n % 58] + digits;
      n = Math.floor(n / 58);
    }
    return `evt_${prefix}${digits}`;
  };
  return {
    nextId,
    event(streamId, sentAt = wallClockMs()) {
      const now = new Date(sentAt).toISOString();
      // The shape of the documented user.created example (docs/tenant.md#webhook-delivery); the send time
      // rides in data.context, which the dispatcher forwards untouched to the sink.
      return {
        id: nextId(),
        source: "urn:auth0:acme.us.auth0.com",
        specversion: "1.0",
        type: "user.updated",
        time: now,
        data: {
          object: {
            user_id: "auth0|679fb1b1e809445f129bc18d",
            email: "nick-testing-21@example.com",
            created_at: "2025-02-02T17:56:01.566Z",
            updated_at: now,
            identities: [{ connection: "Username-Password-Authentication", provider: "auth0", user_id: "679fb1b1e809445f129bc18d", isSocial: false }],
          },
          context: { bench_sent_at: sentAt },
        },
        a0tenant: "acme",
        a0stream: streamId,
      };
    },
  };
}

import type { ChaosSink } from "./chaos-sink.js";

export interface RouteFigures {
  route: string;
  /** Acknowledged ids this route received (accepted at least once). */
  delivered: number;
  /** Acknowledged ids this route never received: must be 0. */
  lost: number;
  /** Accepted requests beyond the first per id: repeats the downstream drops by `webhook-id`. */
  repeats: number;
  /** The most repeats a kill may cause: the route's deliveries in flight, i.e. its concurrency, per kill. */
  repeatBound: number;
  /** Every request the route's downstream saw, failed attempts included. */
  requests: number;
}

/** What one route's downstream saw of the acknowledged events. */
export function routeFigures(route: string, sink: ChaosSink, acknowledged: Iterable<string>, repeatBound: number): RouteFigures {
  const accepted = sink.accepted();
  let delivered = 0;
  let lost = 0;
  for (const id of acknowledged) {
    if (accepted.has(id)) delivered++;
    else lost++;
  }
  let repeats = 0;
  for (const count of accepted.values()) repeats += count - 1;
  return { route, delivered, lost, repeats, repeatBound, requests: sink.sink.requests.length };
}

import { arrivalKeyOf, type AttemptRecord, type WritableRecord } from "./archive-record.js";

/**
 * An event's first deliveries as its row keeps them (`events.delivered`, migration 007):
 * `route:ms after arrival:status`, comma separated. A route's name has neither separator
 * (routes/load-routes.ts). One place writes and reads the form: here.
 */

/** An attempt the event's row can keep: a delivery outside a replay, its times and status whole numbers (as the row's form reads them). */
export function foldable(record: AttemptRecord): boolean {
  return record.outcome === "delivered" && record.replayId === undefined && Number.isSafeInteger(record.at - record.receivedAt) && (record.status === undefined || Number.isSafeInteger(record.status));
}

/** The attempt as an entry of `delivered`. */
export function deliveredEntry(record: AttemptRecord): string {
  return `${record.route}:${record.at - record.receivedAt}:${record.status ?? ""}`;
}

/** The entries of `delivered` as attempts, each with its time. */
export function deliveredAttempts(delivered: string | null, arrivedAt: Date): Array<{ route: string; at: Date; status: number | null }> {
  if (!delivered) return [];
  return delivered.split(",").map((entry) => {
    const [route = "", after = "0", status = ""] = entry.split(":");
    return { route, at: new Date(arrivedAt.getTime() + Number(after)), status: status === "" ? null : Number(status) };
  });
}

/** SQL: the row `e` keeps a first delivery to the route of the parameter (`$n`; NULL: to any route). */
export function deliveredOn(route: string): string {
  return `(e.delivered IS NOT NULL AND (${route}::text IS NULL OR position(',' || ${route} || ':' in ',' || e.delivered) > 0))`;
}

/**
 * Which attempts of a batch go into their event's row: a route's delivery, when the batch
 * holds its event (queued for that route) and no other attempt of that event and route (a retry
 * before it is a row of its own, and its delivery one too, so the route's attempts read in
 * order). Keyed by the attempt; the value is the entry.
 */
export function firstDeliveries(records: WritableRecord[]): Map<AttemptRecord, string> {
  const routesOf = new Map(records.flatMap((record) => (record.kind === "event" ? [[arrivalKeyOf(record), record.routes] as const] : [])));
  const perRoute = new Map<string, AttemptRecord[]>();
  for (const record of records) {
    if (record.kind !== "attempt") continue;
    const key = `${arrivalKeyOf(record)}\n${record.route}`;
    const attempts = perRoute.get(key);
    if (attempts) attempts.push(record);
    else perRoute.set(key, [record]);
  }
  const folded = new Map<AttemptRecord, string>();
  for (const [only, ...others] of perRoute.values()) {
    if (others.length === 0 && only && foldable(only) && routesOf.get(arrivalKeyOf(only))?.includes(only.route)) folded.set(only, deliveredEntry(only));
  }
  return folded;
}

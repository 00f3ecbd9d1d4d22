import type { EventRecord } from "../archive/archive-record.js";
import type { CloudEvent, Origin } from "../events/cloud-event.js";
import type { Admit } from "./admission.js";
import type { EventLedger } from "./event-ledger.js";
import type { FanOut } from "./fan-out.js";

export interface StoreOptions {
  origin: Origin;
  streamId?: string;
  /** Store and deliver again even when the id is known (a forced reconcile). */
  force?: boolean;
}

export interface StoreResult {
  status: "stored" | "duplicate";
  /** the routes the event was queued for (none: stored, and delivered nowhere) */
  routes: string[];
  /** routes its type matched whose filter left it out (routes/route-chooser.ts): no job, outcome `filtered` */
  filtered?: string[];
}

export interface EventStore {
  store(event: CloudEvent, options: StoreOptions): Promise<StoreResult>;
}

export interface EventStoreDeps {
  /** Admission: who has seen which id (event-ledger.ts). */
  ledger: EventLedger;
  /** Fan-out: one delivery job per route (fan-out.ts). */
  fanOut: FanOut;
  /** The routes an event type goes to (routes/route.ts `routesMatching`). */
  routesFor(type: string): string[];
  /** Of those, the routes whose filters take the event (routes/route-chooser.ts `narrow`); none: every one. */
  narrow?(event: CloudEvent, matched: string[]): { routes: string[]; filtered: string[] };
  /** Told once an event is stored that some routes filtered out (never for a duplicate): counted and recorded there. */
  onFiltered?(event: CloudEvent, routes: string[], receivedAt: number): void;
  /**
   * The archive's outbox (archive/archive-outbox.ts), when the archive is on: the event's
   * record is added beside its jobs, in the same round trip, so what is stored is archived
   * even while Postgres is down.
   */
  archive?(record: EventRecord): Promise<void>;
  /**
   * One round trip for an unforced store (admission.ts): the check, the jobs, the claim and
   * the outbox entry in one script. Without it, and where it cannot run, the steps below.
   */
  admit?: Admit;
}

/**
 * The one way an event enters the system, from a webhook or a reconcile alike. An unforced
 * store is one script where `admit` is given (admission.ts): a known id is a duplicate,
 * else the jobs and the claim are written together, all or nothing. Otherwise, and for
 * what the script leaves to it (a record of deliveries without an arrival; a job id held
 * by an earlier arrival's finished job; a Redis that enforces slots), the long way, which
 * keeps the same guarantees in three steps:
 * 1. a known id (within the dedupe TTL) is a duplicate, unless forced; an id whose record
 *    holds only route deliveries is stored with `recheck`, so those routes skip it;
 * 2. one job per matching route is added (fan-out.ts), idempotent on a retried store
 *    (where a finished job of an earlier arrival holds the id, under an id of its own);
 * 3. only then the ledger records the id. A crash between 2 and 3 leaves no ledger entry,
 *    so the tenant's retry stores the event again instead of being told "duplicate".
 * Any Redis error rejects: the caller answers 503 and the tenant retries. Counting what
 * was stored is the caller's (count-stored-events.ts).
 */
export function createEventStore({ ledger, fanOut, routesFor, narrow, onFiltered, archive, admit }: EventStoreDeps): EventStore {
  const routesOf = chooseRoutes(routesFor, narrow);
  return {
    async store(event, { origin, streamId, force = false }) {
      const receivedAt = Date.now();
      const { routes, filtered, matched } = routesOf(event);
      const record = archive && ({ kind: "event", event, origin, streamId, receivedAt, routes: matched, ...(filtered.length > 0 ? { filtered } : {}) } as const);
      const stored = (): StoreResult => {
        if (filtered.length === 0) return { status: "stored", routes };
        onFiltered?.(event, filtered, receivedAt);
        return { status: "stored", routes, filtered };
      };
      let state: Awaited<ReturnType<EventLedger["lookup"]>> | undefined;
      if (admit && !force) {
        const admission = await admit(event, routes, { origin, streamId, receivedAt }, record);
        if (admission === "stored") return stored();
        if (admission === "duplicate") return { status: "duplicate", routes: [] };
        // Nothing was written: the long way, knowing what the ledger holds when it said so
        // (`held`: no record; the fan-out gives the held routes' jobs ids of their own).
        if (admission === "recheck") state = "delivered_only";
        if (admission === "held") state = "absent";
      }
      // A forced store delivers anyway, so it needs neither the check nor a recheck.
      state ??= force ? "absent" : await ledger.lookup(event.id);
      if (state === "arrived") {
        await ledger.recordDuplicate(event.id, receivedAt);
        return { status: "duplicate", routes: [] };
      }
      await Promise.all([
        fanOut(event, routes, { origin, streamId, receivedAt, force, recheck: state === "delivered_only" }),
        record && archive?.(record),
      ]);
      const first = await ledger.claim(event.id, { receivedAt, origin, streamId, type: event.type, routes }, force);
      // Not first: another request with the same id won the race between our check and our claim.
      return first ? stored() : { status: "duplicate", routes: [] };
    },
  };
}

/**
 * The routes an event goes to, by type and then by each route's filter: a filtered route
 * gets no job (its outcome is `filtered`), while the archive lists every route the type
 * matched (`matched`), so search shows the filtered ones too.
 */
function chooseRoutes(routesFor: EventStoreDeps["routesFor"], narrow: EventStoreDeps["narrow"]) {
  return (event: CloudEvent) => {
    const matched = routesFor(event.type);
    if (!narrow || matched.length === 0) return { routes: matched, filtered: [] as string[], matched };
    return { ...narrow(event, matched), matched };
  };
}

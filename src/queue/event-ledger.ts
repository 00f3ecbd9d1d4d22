import { hash } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import type { Origin } from "../events/cloud-event.js";
import { createLedgerTransport, type LedgerCall } from "./ledger-transport.js";
import { createLedgerWindows } from "./ledger-windows.js";
import { ledgerShardsKey } from "./queue-names.js";

/**
 * What this service knows of one event id, kept for DEDUPE_TTL_SECONDS in a compact
 * record (createEventLedger). It outlives the queue jobs: BullMQ's job id alone forgets an
 * id as soon as the job is removed (docs/libraries.md#bullmq-job-ids).
 */
export interface EventRecord {
  eventId: string;
  receivedAt: number;
  origin: Origin;
  streamId?: string;
  type: string;
  routes: string[];
  duplicates: number;
  lastDuplicateAt?: number;
  replays: number;
  /** route name → ms since epoch of its 2xx */
  deliveredAt: Record<string, number>;
  /** route name → ms since epoch when a `dropStale` route skipped it as older than what it had */
  staleAt: Record<string, number>;
  /** the routes whose filter left it out (routes/route-chooser.ts): it had no job there (the mark keeps no time: the arrival is it) */
  filtered: string[];
}

export interface Arrival {
  receivedAt: number;
  origin: Origin;
  streamId?: string;
  type: string;
  routes: string[];
}

/**
 * `arrived`: an event with this id was stored within the TTL. `delivered_only`: routes
 * recorded a 2xx for it but no arrival was claimed (a store that stopped between its
 * jobs and its claim, whose jobs were delivered all the same).
 */
export type LedgerState = "absent" | "arrived" | "delivered_only";

/** A BullMQ add to run inside an admission: its script (`s` standard, `p` prioritized), keys and arguments (capture-job-add.ts). */
export interface AdmittedJob {
  script: "s" | "p";
  keys: string[];
  args: Array<string | Buffer>;
}

/** BullMQ's completion of a job: moveToFinished's keys and arguments, as BullMQ built them (dispatch/mark-at-completion.ts). */
export interface JobCompletion {
  keys: string[];
  args: Array<string | number | Buffer>;
}

/**
 * `stored`: claimed, and every job added, in one step. `duplicate`: the id had arrived;
 * its duplicate is counted, nothing added. `recheck`: the record holds route deliveries but
 * no arrival; nothing written (store it the long way, with `recheck`). `held`: no record,
 * but a finished job of an earlier arrival of the id (older than the TTL: a dead letter, or
 * a delivered job still kept) holds a job's id, where BullMQ would add nothing; nothing
 * written (store it the long way, which gives that job an id of its own: fan-out.ts).
 * `unsupported`: this Redis enforces slots (a cluster), where one script cannot reach the
 * ledger and the queues; nothing written (store it the long way).
 */
export type Admission = "stored" | "duplicate" | "recheck" | "held" | "unsupported";

export interface EventLedger {
  /** The ledger's id shards, fixed in Redis by its first writer (LEDGER_SHARDS then). */
  shards(): Promise<number>;
  get(eventId: string): Promise<EventRecord | undefined>;
  /** Has an event with this id arrived within the TTL? */
  has(eventId: string): Promise<boolean>;
  lookup(eventId: string): Promise<LedgerState>;
  /** Records the arrival; false when the id was already there (a duplicate) and `force` is off. */
  claim(eventId: string, arrival: Arrival, force: boolean): Promise<boolean>;
  recordDuplicate(eventId: string, at: number): Promise<void>;
  markDelivered(eventId: string, route: string, at: number): Promise<void>;
  /** Records that a `dropStale` route skipped the event as stale, for GET /admin/events once its job is gone. */
  markStale(eventId: string, route: string, at: number): Promise<void>;
  /** Records that a route's filter left the stored event out, for GET /admin/events (it has no job there). */
  markFiltered(eventId: string, route: string, at: number): Promise<void>;
  deliveredAt(eventId: string, route: string): Promise<number | undefined>;
  /**
   * A new id's whole store in one script, one round trip: the check, the jobs, the claim,
   * and the outbox entry (an XADD of its fields and values) when given (admission-script.ts). Atomic:
   * it happens whole or not at all. Only for an unforced store.
   */
  admit(eventId: string, arrival: Arrival, jobs: AdmittedJob[], outbox?: { key: string; fields: string[] }): Promise<Admission>;
  /**
   * A delivered job's completion and the route's delivered mark in one script, one round
   * trip, atomic (finish-script.ts): moveToFinished's reply. `unsupported` where one script
   * cannot reach both the ledger and the queue (a cluster): nothing written; mark and
   * complete apart.
   */
  finishDelivered(eventId: string, route: string, at: number, completion: JobCompletion): Promise<{ moved: unknown } | "unsupported">;
  /** Sends the calls gathered and not yet sent (marks, with `gatherMarksMs`) and waits for them and every mark under way: before its connection quits. */
  flush(): Promise<void>;
}

/**
 * How long a worker's marks sent apart from a job's completion wait for others
 * (`gatherMarksMs`): the stale marks, and a delivered one where the completion cannot
 * carry it (finishDelivered's `unsupported`). A script call per few dozen marks instead
 * of per few, half the mark's CPU (docs/benchmarks.md, "Marks gathered"). A crash in that
 * time loses the marks of jobs whose completion reached Redis, which no run of theirs
 * needs again; GET /admin/events then lacks their time (docs/reliability.md). On a single
 * Redis only: a cluster's batches are per shard, where marks seldom meet.
 */
export const deliveryMarkGatherMs = 20;

/** LEDGER_SHARDS's default: callers that do not pass it must read the same shards. */
export const defaultLedgerShards = 1024;

// One script, each op atomic like the MULTI it replaced, and the ops of one turn in one
// call. Not a MULTI or a pipeline: ioredis copies every script defined on the connection
// (BullMQ's, dozens) onto each pipeline it builds (docs/benchmarks.md).

/**
 * The ledger keeps one compact record per id, at most ~40 bytes of Redis
 * (docs/benchmarks.md), because it holds every id of the dedupe window: ~390 bytes per
 * event as a hash of its own made it most of Redis at any sustained rate. Records live in
 * time buckets (a day, or the TTL when shorter) split into `shards` by the id's digest:
 * small hashes that Redis keeps listpack-encoded (up to 512 entries of 64 bytes by
 * default, 128 on some managed services); a lookup scans them, so LEDGER_SHARDS aims at
 * ~100 ids per shard and day. A bucket expires as a whole, TTL plus its length after its
 * first write, so nothing scans for expired ids; a record older than the TTL still in a
 * live bucket reads as absent. A lookup reads the window's buckets of one shard: the
 * shard is the hash tag, so on a cluster the ledger spreads over every master and each
 * call stays in one slot. On a single Redis the calls of one event-loop turn go in one
 * script call across shards (call-batcher.ts); on a cluster only those of one shard, so
 * there nearly every call goes alone. The field is 8 bytes of the id's SHA-256 (with the
 * shard, 74 bits: no two ids of a window share one in practice).
 */
export function createEventLedger(redis: Redis | Cluster, queuePrefix: string, ttlSeconds: number, shards = defaultLedgerShards, { gatherMarksMs = 0 } = {}): EventLedger {
  const transport = createLedgerTransport(redis, gatherMarksMs);
  const bucketSeconds = Math.min(86_400, ttlSeconds);
  // Rounded up: a record written at the end of its bucket is still within a TTL that is not
  // a whole number of buckets (36 h) one bucket further back than the TTL's whole buckets.
  const bucketCount = Math.ceil(ttlSeconds / bucketSeconds) + 1;

  // The shard count is the ledger's, not the process's: the first process to write fixes
  // it in Redis, and every process and CLI command reads it there, whatever LEDGER_SHARDS
  // it was given, so none looks for an id in another shard than the one it was written to.
  let shardCount: Promise<number> | undefined;
  let knownShards: number | undefined;
  const ledgerShards = () =>
    (shardCount ??= (async () => {
      const key = ledgerShardsKey(queuePrefix);
      // Read first: a reader on a replica (or a read-only user) must not need a write.
      const fixed = Number(await redis.get(key));
      if (fixed) return (knownShards = fixed);
      await redis.set(key, shards, "NX");
      return (knownShards = Number(await redis.get(key)) || shards);
    })().catch((error: unknown) => {
      shardCount = undefined; // Redis was down: ask again on the next call.
      throw error;
    }));
  const windowKeys = createLedgerWindows(queuePrefix, bucketCount);
  // The shard count once known: no promise before the batch's (docs/benchmarks.md).
  const prepare = (shardTotal: number, op: string, eventId: string, args: Array<string | number | Buffer>): LedgerCall => {
    // Hex, not a Buffer: a third of the time (docs/benchmarks.md, "The ledger's Lua").
    const digest = hash("sha256", eventId, "hex");
    const shard = Number.parseInt(digest.slice(0, 8), 16) % shardTotal;
    const now = Date.now();
    const keys = windowKeys(shard, Math.floor(now / (bucketSeconds * 1000)), op, transport.perShard());
    return { shard, keys, args: [op, digest.slice(8, 24), now, ttlSeconds, bucketSeconds, ...args] };
  };
  const prepareLater = async (op: string, eventId: string, args: Array<string | number | Buffer>) => prepare(knownShards ?? (await ledgerShards()), op, eventId, args);
  const callVia = (send: (call: LedgerCall) => Promise<unknown>, op: string, eventId: string, args: Array<string | number>): Promise<unknown> =>
    knownShards === undefined ? prepareLater(op, eventId, args).then(send) : send(prepare(knownShards, op, eventId, args));
  const call = (op: string, eventId: string, ...args: Array<string | number>) => callVia(transport.send, op, eventId, args);

  const lookup = async (eventId: string): Promise<LedgerState> => {
    const state = await call("lookup", eventId);
    return state === 1 ? "arrived" : state === 2 ? "delivered_only" : "absent";
  };
  // A mark is sent the newest bucket first, where a record of a recent event is: 1 key
  // instead of the window's 8 (2 and 16 on a cluster; docs/benchmarks.md), and the whole
  // window only when the record is not there (an event older than the newest bucket, or no
  // record yet). With `gatherMarksMs` the first step waits with the others of that time:
  // a script call per few dozen deliveries instead of per few (docs/benchmarks.md, "Marks
  // gathered"). Marks under way are kept for `flush`: a second step leaves only once the
  // first is answered.
  const marking = new Set<Promise<void>>();
  const mark = (eventId: string, route: string, at: number, marks: number) => {
    const marked = (async () => {
      if ((await callVia(transport.sendGathered, "markNewest", eventId, [route, at, marks])) === 2) await call("mark", eventId, route, at, marks);
    })();
    marking.add(marked);
    void marked.then(
      () => marking.delete(marked),
      () => marking.delete(marked),
    );
    return marked;
  };
  return {
    async get(eventId) {
      const reply = (await call("get", eventId)) as Array<string | number> | null;
      return reply ? recordOf(eventId, reply) : undefined;
    },
    async has(eventId) {
      return (await lookup(eventId)) === "arrived";
    },
    lookup,
    shards: ledgerShards,
    async claim(eventId, arrival, force) {
      const args = [arrival.receivedAt, arrival.origin, arrival.type, arrival.streamId ?? "", force ? "1" : "0", ...arrival.routes];
      return (await call("claim", eventId, ...args)) === 1;
    },
    async recordDuplicate(eventId, at) {
      await call("duplicate", eventId, at);
    },
    markDelivered: (eventId, route, at) => mark(eventId, route, at, routeMarks.delivered),
    markStale: (eventId, route, at) => mark(eventId, route, at, routeMarks.stale),
    markFiltered: (eventId, route, at) => mark(eventId, route, at, routeMarks.filtered),
    async deliveredAt(eventId, route) {
      const at = Number(await call("deliveredAt", eventId, route));
      return at >= 0 ? at : undefined;
    },
    async admit(eventId, arrival, jobs, outbox) {
      if (transport.perShard()) return "unsupported";
      const args: Array<string | number | Buffer> = [arrival.receivedAt, arrival.origin, arrival.type, arrival.streamId ?? "", arrival.routes.length, ...arrival.routes];
      const keys: string[] = [];
      for (const job of jobs) {
        keys.push(...job.keys);
        args.push(job.script, ...job.args);
      }
      if (outbox) {
        keys.push(outbox.key);
        args.push(...outbox.fields);
      }
      const prepared = await prepareLater("admit", eventId, args);
      prepared.keys = [...prepared.keys, ...keys];
      try {
        const reply = await transport.admit(prepared);
        if (reply === 0) return "stored";
        if (reply === 1) return "duplicate";
        if (reply === 2) return "recheck";
        if (reply === 3) return "held";
        throw new Error(`the admission script answered ${String(reply)}, which is none of its answers`);
      } catch (error) {
        // A Redis that enforces slots refuses the script before it runs: nothing was written.
        if (!String(error).includes("CROSSSLOT")) throw error;
        transport.enforcesSlots();
        return "unsupported";
      }
    },
    async finishDelivered(eventId, route, at, completion) {
      if (transport.perShard()) return "unsupported";
      const prepared = await prepareLater("finish", eventId, [route, at, routeMarks.delivered, ...completion.args]);
      prepared.keys = [...prepared.keys, ...completion.keys];
      let reply: unknown;
      try {
        reply = await transport.finish(prepared);
      } catch (error) {
        // As an admission: refused before it ran, nothing written.
        if (!String(error).includes("CROSSSLOT")) throw error;
        transport.enforcesSlots();
        return "unsupported";
      }
      if (!Array.isArray(reply) || reply.length !== 2 || reply[0] !== 1) throw new Error(`the finish script answered ${JSON.stringify(reply)}, which is none of its answers`);
      return { moved: reply[1] as unknown };
    },
    async flush() {
      await transport.flush();
      await Promise.allSettled(marking);
    },
  };
}

/** A route's marks in a record (ledger-core.lua). */
const routeMarks = { matched: 1, delivered: 2, stale: 4, filtered: 8 };

/** The `get` op's reply as a record: its fields, then per route its name, marks and the marks' time. */
function recordOf(eventId: string, reply: Array<string | number>): EventRecord {
  const [receivedAt, origin, type, streamId, duplicates, lastDuplicateAt, replays, ...perRoute] = reply;
  const routes: string[] = [];
  const deliveredAt: Record<string, number> = {};
  const staleAt: Record<string, number> = {};
  const filtered: string[] = [];
  for (let i = 0; i + 2 < perRoute.length; i += 3) {
    const [name, marks, at] = [String(perRoute[i]), Number(perRoute[i + 1]), Number(perRoute[i + 2])];
    if (marks & routeMarks.matched) routes.push(name);
    if (marks & routeMarks.delivered) deliveredAt[name] = at;
    if (marks & routeMarks.stale) staleAt[name] = at;
    if (marks & routeMarks.filtered) filtered.push(name);
  }
  return {
    eventId,
    receivedAt: Number(receivedAt),
    origin: origin === "reconcile" || origin === "pull" ? origin : "webhook",
    streamId: streamId ? String(streamId) : undefined,
    type: String(type),
    routes,
    duplicates: Number(duplicates),
    lastDuplicateAt: Number(lastDuplicateAt) >= 0 ? Number(lastDuplicateAt) : undefined,
    replays: Number(replays),
    deliveredAt,
    staleAt,
    filtered,
  };
}

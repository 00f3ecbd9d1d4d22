import type { Cluster, Redis } from "ioredis";
import type { Origin } from "../events/cloud-event.js";
import { ledgerKey } from "./queue-names.js";

/**
 * What this service knows of one event id, kept for DEDUPE_TTL_SECONDS in one Redis
 * hash. It outlives the queue jobs: BullMQ's job id alone forgets an id as soon as the
 * job is removed (STACK-NOTES.md).
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
}

export interface Arrival {
  receivedAt: number;
  origin: Origin;
  streamId?: string;
  type: string;
  routes: string[];
}

/**
 * Ends every script that writes: a record never outlives its TTL, whoever wrote it first.
 * `TTL == -1` (no expiry) rather than `EXPIRE ... NX`, which Redis before 7 refuses, and
 * refuses after the script's HSET already applied (redis-version.ts checks the minimum).
 */
const keepExpiring = (ttlArg: string) => `
if redis.call('TTL', KEYS[1]) == -1 then redis.call('EXPIRE', KEYS[1], ${ttlArg}) end
`;

// One key per call, so it is cluster-safe. ARGV: receivedAt, origin, streamId, type, routes, force, ttl.
const claimScript = `
local key = KEYS[1]
local first = redis.call('HSETNX', key, 'receivedAt', ARGV[1])
local result = 1
if first == 0 and ARGV[6] ~= '1' then
  redis.call('HINCRBY', key, 'duplicates', 1)
  redis.call('HSET', key, 'lastDuplicateAt', ARGV[1])
  result = 0
elseif first == 0 then
  redis.call('HINCRBY', key, 'replays', 1)
else
  redis.call('HSET', key, 'origin', ARGV[2], 'streamId', ARGV[3], 'type', ARGV[4], 'routes', ARGV[5])
  redis.call('EXPIRE', key, ARGV[7])
end
${keepExpiring("ARGV[7]")}
return result
`;

/**
 * `arrived`: an event with this id was stored within the TTL. `delivered_only`: routes
 * recorded a 2xx for it but no arrival was claimed (a store that stopped between its
 * jobs and its claim, whose jobs were delivered all the same).
 */
export type LedgerState = "absent" | "arrived" | "delivered_only";

export interface EventLedger {
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
  deliveredAt(eventId: string, route: string): Promise<number | undefined>;
}

// One round trip each, atomic like the MULTI they replace. A MULTI costs far more here:
// ioredis copies every script defined on the connection (BullMQ's, dozens) onto each
// pipeline it builds: dropping the MULTI cut the dispatcher's CPU per delivery from
// ~400 to ~230 µs (docs/benchmarks.md).
// ARGV: field, value, ttl.
// A record that expired meanwhile starts again with a full TTL (a `delivered_only` record).
const markDeliveredScript = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
${keepExpiring("ARGV[3]")}
return 1
`;
// ARGV: at, ttl. A record that expired since the lookup is not recreated: there is
// nothing left to count the duplicate against.
const recordDuplicateScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'duplicates', 1)
redis.call('HSET', KEYS[1], 'lastDuplicateAt', ARGV[1])
${keepExpiring("ARGV[2]")}
return 1
`;

// 1: an arrival; 2: a record without one (route deliveries only); 0: nothing.
const lookupScript = `
if redis.call('HEXISTS', KEYS[1], 'receivedAt') == 1 then return 1 end
return redis.call('EXISTS', KEYS[1]) * 2
`;

type LedgerCommands = {
  streamkeeperLookup(key: string): Promise<number>;
  streamkeeperClaim(key: string, ...args: (string | number)[]): Promise<number>;
  streamkeeperMarkDelivered(key: string, field: string, at: number, ttlSeconds: number): Promise<number>;
  streamkeeperRecordDuplicate(key: string, at: number, ttlSeconds: number): Promise<number>;
};

export function createEventLedger(redis: Redis | Cluster, queuePrefix: string, ttlSeconds: number): EventLedger {
  const key = (eventId: string) => ledgerKey(queuePrefix, eventId);
  // EVALSHA after the first call; ioredis loads the script again after a Redis restart.
  redis.defineCommand("streamkeeperLookup", { numberOfKeys: 1, lua: lookupScript });
  redis.defineCommand("streamkeeperClaim", { numberOfKeys: 1, lua: claimScript });
  redis.defineCommand("streamkeeperMarkDelivered", { numberOfKeys: 1, lua: markDeliveredScript });
  redis.defineCommand("streamkeeperRecordDuplicate", { numberOfKeys: 1, lua: recordDuplicateScript });
  const commands = redis as unknown as LedgerCommands;
  const lookup = async (eventId: string): Promise<LedgerState> => {
    const state = await commands.streamkeeperLookup(key(eventId));
    return state === 1 ? "arrived" : state === 2 ? "delivered_only" : "absent";
  };
  return {
    async get(eventId) {
      const hash = await redis.hgetall(key(eventId));
      if (!hash.receivedAt) return undefined;
      const deliveredAt: Record<string, number> = {};
      const staleAt: Record<string, number> = {};
      for (const [field, value] of Object.entries(hash)) {
        if (field.startsWith("delivered:")) deliveredAt[field.slice("delivered:".length)] = Number(value);
        if (field.startsWith("stale:")) staleAt[field.slice("stale:".length)] = Number(value);
      }
      return {
        eventId,
        receivedAt: Number(hash.receivedAt),
        origin: hash.origin === "reconcile" ? "reconcile" : "webhook",
        streamId: hash.streamId || undefined,
        type: hash.type ?? "",
        routes: hash.routes ? hash.routes.split(",") : [],
        duplicates: Number(hash.duplicates ?? 0),
        lastDuplicateAt: hash.lastDuplicateAt ? Number(hash.lastDuplicateAt) : undefined,
        replays: Number(hash.replays ?? 0),
        deliveredAt,
        staleAt,
      };
    },
    async has(eventId) {
      return (await lookup(eventId)) === "arrived";
    },
    lookup,
    async claim(eventId, arrival, force) {
      const result = await commands.streamkeeperClaim(
        key(eventId),
        arrival.receivedAt,
        arrival.origin,
        arrival.streamId ?? "",
        arrival.type,
        arrival.routes.join(","),
        force ? "1" : "0",
        ttlSeconds,
      );
      return result === 1;
    },
    async recordDuplicate(eventId, at) {
      await commands.streamkeeperRecordDuplicate(key(eventId), at, ttlSeconds);
    },
    async markDelivered(eventId, route, at) {
      await commands.streamkeeperMarkDelivered(key(eventId), `delivered:${route}`, at, ttlSeconds);
    },
    async markStale(eventId, route, at) {
      await commands.streamkeeperMarkDelivered(key(eventId), `stale:${route}`, at, ttlSeconds);
    },
    async deliveredAt(eventId, route) {
      const value = await redis.hget(key(eventId), `delivered:${route}`);
      return value ? Number(value) : undefined;
    },
  };
}

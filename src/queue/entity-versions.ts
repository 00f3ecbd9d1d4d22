import { hash } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import type { EntityVersion } from "../events/entity-version.js";
import { loadLua } from "../redis/load-lua.js";

/** What became of the attempt `leave` ends. */
export type LeaveOutcome = "delivered" | "unanswered" | "refused";

const outcomeCodes: Record<LeaveOutcome, string> = { delivered: "1", unanswered: "2", refused: "0" };

/** What `enter` found: the state may go (the lease is ours), it is stale, or another delivery of the entity holds the lease. */
export type Entry = { outcome: "go" } | { outcome: "stale" } | { outcome: "busy"; leaseLeftMs: number };

/**
 * The newest state of each entity delivered to each `dropStale` route, and a lease per
 * (route, entity) around each delivery, so a route never gets an older state after a
 * newer one, nor two states of one entity at once, whatever the number of workers.
 */
export interface EntityVersions {
  /** Takes the entity's lease for `owner` if the state is not stale and no one else holds it. */
  enter(route: string, version: EntityVersion, owner: string, leaseMs: number, now?: number): Promise<Entry>;
  /**
   * Records the state when the route may have it (`delivered`: a 2xx; `unanswered`: no
   * answer, tagged with its event so its own retry still goes; `refused`: a non-2xx,
   * nothing recorded) and gives the lease back, in one step. False when the lease had expired.
   */
  leave(route: string, version: EntityVersion, owner: string, outcome: LeaveOutcome, now?: number): Promise<boolean>;
}

/**
 * Versions live in hashes, not a key per entity: a small hash is one listpack, ~55 bytes
 * an entity against ~190 for a key with its TTL (README "Routes"). A hash field has no
 * TTL of its own before Redis 7.4, so time is cut into windows of the TTL: a delivery
 * writes its entity into the current window's hash, which expires at the end of the next
 * window, and a read takes the newest of the previous, current and next windows (the
 * next one too, so a worker whose clock runs ahead is still seen). A version thus lives
 * one to two TTLs after the entity's last delivery. Each window is split over
 * `shards` hashes per route, so each stays a listpack (128 fields, Redis's default
 * hash-max-listpack-entries) up to ~500,000 entities per route and window.
 */
const shards = 4096;

// Versions, their order and the lease in one step: entity-versions.lua (the functions),
// entity-enter.lua and entity-leave.lua (the two calls, with their keys and arguments).
const enterScript = loadLua(new URL("./entity-enter.lua", import.meta.url));
const leaveScript = loadLua(new URL("./entity-leave.lua", import.meta.url));

type Commands = {
  streamkeeperEnterEntity(...args: [...keys: string[], entity: string, owner: string, leaseMs: number, age: number, change: string, tag: string]): Promise<number>;
  streamkeeperLeaveEntity(...args: [...keys: string[], entity: string, owner: string, outcome: string, age: number, change: string, expireAt: number, tag: string]): Promise<number>;
};

const changeCodes = { created: "c", deleted: "d", changed: "u" } as const;

/**
 * The event of a delete recorded without an answer (the route may have it): 8 bytes of the
 * id's digest, as 16 hex digits, kept beside the version in the window's tags, so that
 * event's own retry knows the record as its own, not as a newer state (entity-versions.lua).
 * Only deletes are tagged (a create's or an update's retry passes by the rules), so no other
 * state is hashed: its tag is empty, and matches none.
 */
function stateTag({ change, eventId }: EntityVersion): string {
  return change === "deleted" ? hash("sha256", eventId, "hex").slice(0, 16) : "";
}

/** FNV-1a: a cheap, stable spread of entities over the shards. */
function shardOf(entity: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < entity.length; index++) hash = Math.imul(hash ^ entity.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % shards;
}

/** Versions are kept one to two `ttlSeconds` (DEDUPE_TTL_SECONDS) after an entity's last delivery. */
export function createEntityVersions(redis: Redis | Cluster, queuePrefix: string, ttlSeconds: number): EntityVersions {
  redis.defineCommand("streamkeeperEnterEntity", { numberOfKeys: 7, lua: enterScript });
  redis.defineCommand("streamkeeperLeaveEntity", { numberOfKeys: 7, lua: leaveScript });
  const commands = redis as unknown as Commands;
  const keys = (route: string, entity: string, now: number) => {
    const window = Math.floor(now / 1000 / ttlSeconds);
    // The route and shard are the hash tag: a call's seven keys share a slot, and the shards spread over a cluster.
    const base = `{${queuePrefix}:versions:${route}:${shardOf(entity)}}`;
    const windows = [window - 1, window, window + 1];
    // The lease, the windows' versions, the windows' tags (entity-enter.lua).
    return { keys: [`${base}:lease:${entity}`, ...windows.map((at) => `${base}:${at}`), ...windows.map((at) => `${base}:tags:${at}`)], expireAt: (window + 2) * ttlSeconds };
  };
  return {
    async enter(route, version, owner, leaseMs, now = Date.now()) {
      const { entity, age, change } = version;
      const answer = await commands.streamkeeperEnterEntity(...keys(route, entity, now).keys, entity, owner, leaseMs, age, changeCodes[change], stateTag(version));
      return answer === 0 ? { outcome: "go" } : answer < 0 ? { outcome: "stale" } : { outcome: "busy", leaseLeftMs: answer };
    },
    async leave(route, version, owner, outcome, now = Date.now()) {
      const { entity, age, change } = version;
      const { keys: all, expireAt } = keys(route, entity, now);
      const answer = await commands.streamkeeperLeaveEntity(...all, entity, owner, outcomeCodes[outcome], age, changeCodes[change], expireAt, stateTag(version));
      return answer === 1;
    },
  };
}

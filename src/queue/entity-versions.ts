import type { Cluster, Redis } from "ioredis";
import type { EntityVersion } from "../events/entity-version.js";
import { bullPrefix } from "./queue-names.js";

/** What `enter` found: the state may go (the lease is ours), it is stale, or another delivery of the entity holds the lease. */
export type Entry = { outcome: "go" } | { outcome: "stale" } | { outcome: "busy"; leaseLeftMs: number };

/**
 * The newest state of each entity delivered to each `dropStale` route, and a lease per
 * (route, entity) around each delivery, so a route never gets an older state after a
 * newer one, nor two states of one entity at once, whatever the number of workers.
 */
export interface EntityVersions {
  /** Takes the entity's lease for `owner` if the state is not stale and no one else holds it. */
  enter(route: string, version: EntityVersion, owner: string, leaseMs: number): Promise<Entry>;
  /**
   * Records the state as delivered when `received` (a 2xx, or no answer: the route may
   * have it) and gives the lease back, in one step. False when the lease had expired.
   */
  leave(route: string, version: EntityVersion, owner: string, received: boolean): Promise<boolean>;
}

// A version is the state's age in ms, negated once the entity is deleted. Integers, so
// Redis keeps each as a number, not a string: ~80 bytes per entity (README "Routes").
// Returns the version to keep once this state is delivered, or nil when it is stale:
// - nothing known yet: it goes;
// - deleted: only a create newer than the delete goes (the id lives again: social and
//   custom-database users keep their user_id when re-created); updates never do, whatever
//   their time, since delivering one would bring a deleted user back downstream;
// - alive: a delete always goes (the newest state), anything else unless it is older.
const nextVersion = `
local function next_version(raw, age, change)
  local stored = raw and tonumber(raw)
  if not stored then
    if change == 'd' then return -age end
    return age
  end
  if stored < 0 then
    if change == 'c' and age > -stored then return age end
    return nil
  end
  if change == 'd' then return -math.max(stored, age) end
  if age >= stored then return age end
  return nil
end
`;

// KEYS: lease, version (one hash tag, one slot). ARGV: owner, leaseMs, age, change.
// Returns 0 (go, the lease is ours), -1 (stale) or the ms left on another's lease.
const enterScript = `${nextVersion}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return math.max(redis.call('PTTL', KEYS[1]), 1)
end
if not next_version(redis.call('GET', KEYS[2]), tonumber(ARGV[3]), ARGV[4]) then return -1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 0
`;

// KEYS: lease, version. ARGV: owner, received (1/0), age, change, ttl seconds.
// The version only moves forward: should the lease have expired and another delivery
// have recorded a newer state meanwhile, that one stays.
const leaveScript = `${nextVersion}
if ARGV[2] == '1' then
  local version = next_version(redis.call('GET', KEYS[2]), tonumber(ARGV[3]), ARGV[4])
  if version then redis.call('SET', KEYS[2], string.format('%d', version), 'EX', ARGV[5]) end
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

type Commands = {
  streamkeeperEnterEntity(lease: string, version: string, owner: string, leaseMs: number, age: number, change: string): Promise<number>;
  streamkeeperLeaveEntity(lease: string, version: string, owner: string, received: string, age: number, change: string, ttlSeconds: number): Promise<number>;
};

const changeCodes = { created: "c", deleted: "d", changed: "u" } as const;

/** Versions are kept `ttlSeconds` (DEDUPE_TTL_SECONDS) after an entity's last delivery. */
export function createEntityVersions(redis: Redis | Cluster, queuePrefix: string, ttlSeconds: number): EntityVersions {
  const base = bullPrefix(queuePrefix);
  const keys = (route: string, entity: string) => [`${base}:lease:${route}:${entity}`, `${base}:version:${route}:${entity}`] as const;
  redis.defineCommand("streamkeeperEnterEntity", { numberOfKeys: 2, lua: enterScript });
  redis.defineCommand("streamkeeperLeaveEntity", { numberOfKeys: 2, lua: leaveScript });
  const commands = redis as unknown as Commands;
  return {
    async enter(route, { entity, age, change }, owner, leaseMs) {
      const answer = await commands.streamkeeperEnterEntity(...keys(route, entity), owner, leaseMs, age, changeCodes[change]);
      return answer === 0 ? { outcome: "go" } : answer < 0 ? { outcome: "stale" } : { outcome: "busy", leaseLeftMs: answer };
    },
    async leave(route, { entity, age, change }, owner, received) {
      const answer = await commands.streamkeeperLeaveEntity(...keys(route, entity), owner, received ? "1" : "0", age, changeCodes[change], ttlSeconds);
      return answer === 1;
    },
  };
}

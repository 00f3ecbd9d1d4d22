import type { Cluster, Redis } from "ioredis";

/**
 * A lease in Redis: one key holding its holder's token for a while. It is taken only when
 * free, and only its holder extends it or gives it back, so a holder that stalled past its
 * lease cannot cut short the next holder's. Scripts that take or give back a lease in the
 * same step as other writes include these functions (entity-versions.ts, the sweep's
 * checkpoint fence); everything else uses createRedisLease.
 */
export const leaseLua = `
-- 0 when the lease was free and is now owner's for ms; else the ms (at least 1) left on the holder's.
local function lease_take(key, owner, ms)
  if redis.call('SET', key, owner, 'NX', 'PX', ms) then return 0 end
  return math.max(redis.call('PTTL', key), 1)
end
local function lease_holds(key, owner)
  return redis.call('GET', key) == owner
end
-- 1 when owner held the lease and gave it back; 0 when it was not theirs (expired, maybe taken).
local function lease_release(key, owner)
  if not lease_holds(key, owner) then return 0 end
  redis.call('DEL', key)
  return 1
end
`;

export interface RedisLease {
  /** Takes the lease for `owner` when free: 0 when taken, else the ms (at least 1) until the holder's lease ends. */
  acquire(owner: string, leaseMs: number): Promise<number>;
  /** Extends `owner`'s lease; false when it is no longer theirs (expired, maybe taken). */
  renew(owner: string, leaseMs: number): Promise<boolean>;
  /** Gives `owner`'s lease back; false when it was no longer theirs. */
  release(owner: string): Promise<boolean>;
}

type LeaseCommands = {
  streamkeeperLeaseAcquire(key: string, owner: string, leaseMs: number): Promise<number>;
  streamkeeperLeaseRenew(key: string, owner: string, leaseMs: number): Promise<number>;
  streamkeeperLeaseRelease(key: string, owner: string): Promise<number>;
};

/** The lease at `key`, one script (one round trip) per call. */
export function createRedisLease(redis: Redis | Cluster, key: string): RedisLease {
  redis.defineCommand("streamkeeperLeaseAcquire", { numberOfKeys: 1, lua: `${leaseLua}\nreturn lease_take(KEYS[1], ARGV[1], ARGV[2])` });
  redis.defineCommand("streamkeeperLeaseRenew", {
    numberOfKeys: 1,
    lua: `${leaseLua}\nif not lease_holds(KEYS[1], ARGV[1]) then return 0 end\nredis.call('PEXPIRE', KEYS[1], ARGV[2])\nreturn 1`,
  });
  redis.defineCommand("streamkeeperLeaseRelease", { numberOfKeys: 1, lua: `${leaseLua}\nreturn lease_release(KEYS[1], ARGV[1])` });
  const commands = redis as unknown as LeaseCommands;
  return {
    acquire: (owner, leaseMs) => commands.streamkeeperLeaseAcquire(key, owner, leaseMs),
    renew: async (owner, leaseMs) => (await commands.streamkeeperLeaseRenew(key, owner, leaseMs)) === 1,
    release: async (owner) => (await commands.streamkeeperLeaseRelease(key, owner)) === 1,
  };
}

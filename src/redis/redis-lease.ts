import type { Cluster, Redis } from "ioredis";
import { loadLua } from "./load-lua.js";

/**
 * A lease in Redis: one key holding its holder's token for a while. It is taken only when
 * free, and only its holder extends it or gives it back, so a holder that stalled past its
 * lease cannot cut short the next holder's. Scripts that take or give back a lease in the
 * same step as other writes include lease.lua (entity-versions.ts, the sweep's checkpoint
 * fence, the pull's offset); everything else uses createRedisLease.
 */
const acquireScript = loadLua(new URL("./lease-acquire.lua", import.meta.url));
const renewScript = loadLua(new URL("./lease-renew.lua", import.meta.url));
const releaseScript = loadLua(new URL("./lease-release.lua", import.meta.url));

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
  redis.defineCommand("streamkeeperLeaseAcquire", { numberOfKeys: 1, lua: acquireScript });
  redis.defineCommand("streamkeeperLeaseRenew", { numberOfKeys: 1, lua: renewScript });
  redis.defineCommand("streamkeeperLeaseRelease", { numberOfKeys: 1, lua: releaseScript });
  const commands = redis as unknown as LeaseCommands;
  return {
    acquire: (owner, leaseMs) => commands.streamkeeperLeaseAcquire(key, owner, leaseMs),
    renew: async (owner, leaseMs) => (await commands.streamkeeperLeaseRenew(key, owner, leaseMs)) === 1,
    release: async (owner) => (await commands.streamkeeperLeaseRelease(key, owner)) === 1,
  };
}

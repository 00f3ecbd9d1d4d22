import type pg from "pg";
import { loadLua } from "../load-lua.js";
import type { RedisClient } from "../redis/redis-connection.js";

const claimScript = loadLua(new URL("./outbox-database-claim.lua", import.meta.url));

export interface ClaimTiming {
  /** A writer that stops renewing its claim (gone) hands the outbox to another database after this long. @defaultValue 60 */
  seconds: number;
  /** How often a writer renews its claim, or asks again while refused. @defaultValue 10000 */
  everyMs: number;
}

export const defaultClaimTiming: ClaimTiming = { seconds: 60, everyMs: 10_000 };

export type OutboxDatabaseClaim = () => Promise<{ held: true } | { held: false; holder: string }>;

/**
 * One archive per outbox (docs/deploy.md, The archive: one database): processes sharing a
 * Redis share its outbox, so a writer whose database is another than the other writers'
 * would split the archive. The first writer's database takes the outbox (its id from
 * `archive_identity`, in Redis for `timing.seconds`, renewed every `timing.everyMs`); a writer of
 * another database takes no record while that claim stands, and gets it once the holders are
 * gone for `timing.seconds` (a move to a new database: every process restarted with the new URL).
 */
export function createOutboxDatabaseClaim(redis: RedisClient, pool: pg.Pool, outboxKey: string, describe: string, timing = defaultClaimTiming): OutboxDatabaseClaim {
  const key = `${outboxKey}:database`;
  let mine: string | undefined;
  let renewedAt = -Infinity;
  return async () => {
    if (Date.now() - renewedAt < timing.everyMs) return { held: true };
    mine ??= (await pool.query<{ id: string }>("SELECT id FROM archive_identity")).rows[0]!.id;
    const holder = (await redis.eval(claimScript, 1, key, mine, `${mine} ${describe}`, timing.seconds)) as string | null;
    if (holder !== null) return { held: false, holder: holder.slice(holder.indexOf(" ") + 1) };
    renewedAt = Date.now();
    return { held: true };
  };
}

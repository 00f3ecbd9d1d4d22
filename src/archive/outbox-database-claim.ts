import type pg from "pg";
import { loadLua } from "../redis/load-lua.js";
import type { RedisClient } from "../redis/redis-connection.js";

const claimScript = loadLua(new URL("./outbox-database-claim.lua", import.meta.url));

export interface ClaimTiming {
  /** A writer that stops renewing its claim (gone) hands the outbox to another database after this long. @defaultValue 60 */
  seconds: number;
  /** How often a writer renews its claim, or asks again while refused. @defaultValue 10000 */
  everyMs: number;
}

export const defaultClaimTiming: ClaimTiming = { seconds: 60, everyMs: 10_000 };

/** Claims the outbox for the database of this id: held (renewed), or refused with the holder's description. */
export type OutboxDatabaseClaim = (databaseId: string) => Promise<{ held: true } | { held: false; holder: string }>;

/** Which archive a database is (`archive_identity`, migration 005): read again whenever the writer (re)connects. */
export async function archiveIdentity(pool: pg.Pool): Promise<string> {
  return (await pool.query<{ id: string }>("SELECT id FROM archive_identity")).rows[0]!.id;
}

/**
 * One archive per outbox (docs/deploy.md, The archive: one database): processes sharing a
 * Redis share its outbox, so a writer whose database is another than the other writers'
 * would split the archive. The first writer's database takes the outbox (its id, in Redis for
 * `timing.seconds`, renewed every `timing.everyMs`, also while Postgres is away: the
 * database is still the archive); a writer of another database takes no record while that
 * claim stands, and gets it once the holders are gone for `timing.seconds` (a move to a new
 * database: every process restarted with the new URL).
 */
export function createOutboxDatabaseClaim(redis: RedisClient, outboxKey: string, describe: string, timing = defaultClaimTiming): OutboxDatabaseClaim {
  const key = `${outboxKey}:database`;
  let renewed: { id: string; at: number } | undefined;
  return async (databaseId) => {
    if (renewed?.id === databaseId && Date.now() - renewed.at < timing.everyMs) return { held: true };
    const holder = (await redis.eval(claimScript, 1, key, databaseId, `${databaseId} ${describe}`, timing.seconds)) as string | null;
    if (holder !== null) return { held: false, holder: holder.slice(holder.indexOf(" ") + 1) };
    renewed = { id: databaseId, at: Date.now() };
    return { held: true };
  };
}

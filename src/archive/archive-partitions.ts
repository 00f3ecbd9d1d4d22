import type pg from "pg";

const dayMs = 86_400_000;
/** The partitioned tables; each has one partition per UTC day of arrival, named `<table>_pYYYYMMDD`. */
const tables = ["events", "attempts"] as const;
/** Days of partitions made ahead of today, so a midnight or a skewed clock never finds none. */
const daysAhead = 2;

function dayName(dayStart: number): string {
  return new Date(dayStart).toISOString().slice(0, 10).replaceAll("-", "");
}

function startOfDay(ms: number): number {
  return Math.floor(ms / dayMs) * dayMs;
}

/** The oldest arrival kept: rows older than this are (or are about to be) dropped with their day. */
export function oldestKept(now: number, retentionDays: number): number {
  return startOfDay(now) - retentionDays * dayMs;
}

/**
 * Retention by whole days (docs/architecture.md): makes the partitions of every day from
 * the oldest kept up to `daysAhead` after today, and drops every partition whose day ended
 * before the oldest kept. Never a row delete. `now` is injected so a test moves the clock.
 * Resolves with the partitions it dropped.
 */
export async function maintainPartitions(pool: pg.Pool, now: number, retentionDays: number): Promise<string[]> {
  const first = oldestKept(now, retentionDays);
  const last = startOfDay(now) + daysAhead * dayMs;
  const dropped: string[] = [];
  for (const table of tables) {
    const existing = new Set(
      (await pool.query<{ name: string }>("SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = $1", [table])).rows.map((row) => row.name),
    );
    for (let day = first; day <= last; day += dayMs) {
      const name = `${table}_p${dayName(day)}`;
      if (existing.has(name)) continue;
      await pool
        .query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${table} FOR VALUES FROM ('${new Date(day).toISOString()}') TO ('${new Date(day + dayMs).toISOString()}')`)
        // Two processes making the same day at once: the loser's is already there.
        .catch((error: { code?: string }) => {
          if (error.code !== "42P07" && error.code !== "23505") throw error;
        });
    }
    for (const name of existing) {
      const match = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
      if (!match) continue;
      const day = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
      if (day + dayMs <= first) {
        await pool.query(`DROP TABLE IF EXISTS ${name}`);
        dropped.push(name);
      }
    }
  }
  return dropped;
}

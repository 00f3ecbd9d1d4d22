import { readdir, readFile } from "node:fs/promises";
import type pg from "pg";
import { checkOut } from "./check-out.js";

/** The folder of the numbered migrations, beside this module in src/ and in dist/ alike (the build copies them). */
const sqlDir = new URL("./sql/", import.meta.url);

/**
 * Applies each numbered `.sql` file of sql/ once, in order, each in its own transaction
 * with its row in `archive_migrations`; an advisory lock keeps two processes starting at
 * once from applying one twice. Resolves with the versions it applied.
 */
export async function migrateArchive(pool: pg.Pool): Promise<number[]> {
  const files = (await readdir(sqlDir)).filter((name) => /^\d+-.+\.sql$/.test(name)).sort();
  const client = await checkOut(pool);
  const applied: number[] = [];
  try {
    await client.query("SELECT pg_advisory_lock(hashtext('streamkeeper archive migrations'))");
    await client.query("CREATE TABLE IF NOT EXISTS archive_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
    const done = new Set((await client.query<{ version: number }>("SELECT version FROM archive_migrations")).rows.map((row) => row.version));
    for (const file of files) {
      const version = Number.parseInt(file, 10);
      if (done.has(version)) continue;
      const sql = await readFile(new URL(file, sqlDir), "utf8");
      await client.query("BEGIN");
      try {
        await client.query(sql);
        await client.query("INSERT INTO archive_migrations (version, name) VALUES ($1, $2)", [version, file]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw new Error(`archive migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(version);
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext('streamkeeper archive migrations'))").catch(() => {});
    client.release();
  }
  return applied;
}

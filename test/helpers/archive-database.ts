import { randomUUID } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

export interface TestDatabase {
  /** A fresh, empty database of the run's Postgres. */
  url: string;
  /** Runs one query on it (for checks in SQL). */
  query<Row extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<Row[]>;
  /** Drops it (every connection to it is cut). */
  drop(): Promise<void>;
}

/** A database of its own for a test file, on the run's Postgres (global-setup.ts). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = inject("postgresUrl");
  const name = `sk_${randomUUID().replaceAll("-", "")}`;
  const root = new pg.Client({ connectionString: admin });
  await root.connect();
  await root.query(`CREATE DATABASE ${name}`);
  await root.end();
  const url = admin.replace(/\/postgres$/, `/${name}`);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // Dropped WITH (FORCE) at the end: a connection still closing is cut then, not an error of the test.
  pool.on("error", () => {});
  return {
    url,
    query: async (text, values) => (await pool.query(text, values)).rows,
    async drop() {
      await pool.end();
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

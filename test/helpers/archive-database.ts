import { randomUUID } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import { migrateArchive } from "../../src/archive/migrate-archive.js";

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

export interface ArchiveDatabase extends TestDatabase {
  /** A pool on it (three connections unless told, as a writer's); ended by `drop`. */
  pool: pg.Pool;
}

/** A test database and a pool on it, with no schema (a test of the migrations makes it). */
export async function createPooledDatabase(connections = 3): Promise<ArchiveDatabase> {
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: connections });
  // The database is dropped WITH (FORCE) at the end: a connection still closing is cut then.
  pool.on("error", () => {});
  return {
    ...db,
    pool,
    async drop() {
      await pool.end();
      await db.drop();
    },
  };
}

/** A test database with the archive's schema and the day partitions of its retention (30 days), and a pool on it. */
export async function createArchiveDatabase(connections = 3): Promise<ArchiveDatabase> {
  const db = await createPooledDatabase(connections);
  await migrateArchive(db.pool);
  await maintainPartitions(db.pool, Date.now(), 30);
  return db;
}

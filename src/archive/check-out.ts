import type pg from "pg";

/**
 * `pool.connect()` for a client held across several queries. The pool listens for errors
 * only on idle clients: a connection cut while one is checked out (Postgres stopped or
 * restarted) would be an uncaught 'error' and end the process. Its pending query fails
 * instead, and the caller's own handling (retry, say so) takes over.
 */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  const ignore = () => {};
  client.on("error", ignore);
  const release = client.release.bind(client);
  client.release = (error?: Error | boolean) => {
    client.removeListener("error", ignore);
    release(error);
  };
  return client;
}

import pg from "pg";

/**
 * The archive's connections. A statement not answered within `timeoutMs` fails on both
 * sides: Postgres cancels a slow one (statement_timeout), and the client gives up on a
 * server that answers nothing at all (query_timeout: a SIGSTOPped or partitioned server
 * cannot cancel anything), a little later so that Postgres's own error comes first when it
 * can. The pool closes a connection whose query failed that way (pg-pool's release with an
 * error), so none waits behind an unanswered statement.
 */
export function createArchivePool(url: string, timeoutMs: number, applicationName: string): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max: 5,
    connectionTimeoutMillis: timeoutMs,
    idleTimeoutMillis: 10_000,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    application_name: applicationName,
  });
}

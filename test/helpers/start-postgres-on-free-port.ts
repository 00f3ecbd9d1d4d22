import { startPostgresServer, type PostgresServer, type PostgresServerOptions } from "../../src/archive/postgres-server.js";
import { freePort } from "../../src/redis/redis-server.js";
import { retryOnTakenPort } from "./retry-on-taken-port.js";

/** A throwaway `postgres` on a free loopback port; started again on another should the port be taken before it binds. */
export function startPostgresOnFreePort(options: Omit<PostgresServerOptions, "port">): Promise<PostgresServer> {
  return retryOnTakenPort(async () => startPostgresServer({ ...options, port: await freePort() }));
}

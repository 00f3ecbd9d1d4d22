/** Nothing listens on the discard port of loopback: a command sent there finds no service (connection refused). */
export const noServiceUrl = "http://127.0.0.1:9";

/**
 * A loopback port where nothing listens, that fetch does connect to (9 above is on
 * fetch's list of ports it refuses by itself, "bad port", before any connection): a
 * connection there is refused (ECONNREFUSED). No test binds a port below 1024, so unlike
 * a port found free, nothing can take it while a test counts on it being refused.
 */
export const refusedPort = 2;
export const refusedUrl = `http://127.0.0.1:${refusedPort}`;

/**
 * The settings of a `streamkeeper` command a test runs, with every port explicit: never
 * the defaults (PORT 8080, ADMIN_PORT 9090), where a service running on the machine would
 * answer instead of the test's own. `start` and `demo` bind port 0 unless told; every other
 * command reaches the service at ADMIN_URL, set to a refused address unless the test gives
 * ADMIN_URL or ADMIN_PORT. global-setup.ts proves it for the whole run (default-port-decoys.ts).
 */
export function explicitPorts(args: string[], env: Record<string, string>): Record<string, string> {
  if (args[0] === "start" || args[0] === "demo") return { PORT: "0", ADMIN_PORT: "0", ...env };
  if (env.ADMIN_URL !== undefined || env.ADMIN_PORT !== undefined) return env;
  return { ADMIN_URL: noServiceUrl, ...env };
}

import { createServer, type Server } from "node:http";

/** The service's default ports (README.md#settings: PORT 8080, ADMIN_PORT 9090): no test may reach them. */
export const defaultPorts = [8080, 9090];

export interface DefaultPortDecoys {
  /** The ports this run holds (a port another program holds is left to it). */
  held: number[];
  /** What reached them: `<port> <method> <path>`, in arrival order. */
  hits: string[];
  close(): Promise<void>;
}

/**
 * Listens on each default port that is free, on every interface, and records any request
 * that reaches it: a test that falls back to a default port or the default ADMIN_URL would
 * talk to whatever runs on the machine, so the run fails at its end naming what was asked
 * (global-setup.ts). The decoy answers 503 at once, so the test fails on its own too.
 */
export async function startDefaultPortDecoys(ports = defaultPorts): Promise<DefaultPortDecoys> {
  const hits: string[] = [];
  const servers: Server[] = [];
  const held: number[] = [];
  for (const port of ports) {
    const server = createServer((req, res) => {
      hits.push(`${port} ${req.method} ${req.url}`);
      res.writeHead(503, { "content-type": "text/plain" }).end(`test decoy on default port ${port}: tests must give explicit ports (PORT, ADMIN_PORT, ADMIN_URL)\n`);
    });
    // Something that does not speak HTTP (a Redis client, a raw socket) counts too.
    server.on("clientError", (_error, socket) => {
      hits.push(`${port} (not HTTP)`);
      socket.destroy();
    });
    const listening = await new Promise<boolean>((ok) => {
      server.once("error", () => ok(false));
      server.listen(port, () => ok(true));
    });
    if (!listening) continue;
    server.unref();
    servers.push(server);
    held.push(port);
  }
  return {
    held,
    hits,
    close: () =>
      Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((ok) => {
              server.close(() => ok());
              server.closeAllConnections();
            }),
        ),
      ).then(() => undefined),
  };
}

import { connect, createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface FrontDoor {
  /** `http://127.0.0.1:<port>`: the service's public URL (streams point here, PUBLIC_URL says it). */
  url: string;
  /** the door's port, for a URL of another scheme (`redis://127.0.0.1:<port>`) */
  port: number;
  /** From now on, new connections go through to `target` (the service's own URL, any free port). */
  open(target: string): void;
  /** From now on, new connections are cut at once (as when the service is down); the ones open stay. */
  shut(): void;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

/**
 * An address the test holds for its whole length, for a server that must be known at one
 * URL before it runs (a tenant stream pointing at the service, a service pointing at its
 * Redis) and is down or restarted meanwhile. Picking a free port and starting the service on it later races with every
 * other test file: the port is free when asked, not when the service binds it, and a
 * server on a fixed port cannot retry on another. Here the door's port is never free:
 * shut, it cuts each connection (a delivery or a Redis command fails, as against a server
 * that is down); open, it passes the bytes through to wherever the server bound (any free
 * port). A connection through it ends when the server's side ends (a killed Redis).
 */
export async function startFrontDoor(): Promise<FrontDoor> {
  let target: { host: string; port: number } | undefined;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  const server = createServer((incoming) => {
    track(incoming);
    if (!target) {
      incoming.resetAndDestroy();
      return;
    }
    const outgoing = connect(target.port, target.host);
    track(outgoing);
    const cut = () => {
      incoming.destroy();
      outgoing.destroy();
    };
    incoming.on("error", cut);
    outgoing.on("error", cut);
    incoming.pipe(outgoing).pipe(incoming);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    open(url) {
      const parsed = new URL(url);
      target = { host: parsed.hostname, port: Number(parsed.port) };
    },
    shut() {
      target = undefined;
    },
    close: () =>
      new Promise((ok) => {
        target = undefined;
        server.close(() => ok());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

import { connect, createServer, type AddressInfo, type Socket } from "node:net";

export interface FreezingProxy {
  /** `redis://127.0.0.1:<port>` (or any scheme the caller swaps in): the proxy's address. */
  url: string;
  /** Stops forwarding in both directions, connections kept open: a server that hangs, not one that died. */
  freeze(): void;
  /** Forwards again, what was held back first. */
  thaw(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of `target` ("127.0.0.1:6379" form) that can stop forwarding without
 * closing anything: the client sees a connected server that no longer answers.
 */
export async function startFreezingProxy(target: { host: string; port: number }): Promise<FreezingProxy> {
  const sockets = new Set<Socket>();
  const pipes: Array<{ from: Socket; to: Socket }> = [];
  let frozen = false;
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      pipes.push({ from, to });
      from.on("data", (chunk) => to.write(chunk));
    }
    if (frozen) client.pause();
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze() {
      frozen = true;
      for (const { from } of pipes) from.pause();
    },
    thaw() {
      frozen = false;
      for (const { from } of pipes) from.resume();
    },
    close: () =>
      new Promise<void>((ok) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => ok());
      }),
  };
}

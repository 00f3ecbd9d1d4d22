import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { RequestListener } from "node:http";
import { createServer } from "node:http";

export interface Serving {
  server: Server;
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish, then cuts what is left after `timeoutMs`. */
  close(timeoutMs: number): Promise<void>;
}

export interface ServeOptions {
  /**
   * The handler answers `Expect: 100-continue` itself (`res.writeContinue()` once it wants
   * the body), so a request it refuses from its headers is never invited to send one.
   * Off: Node sends `100 Continue` to every such request before the handler sees it.
   */
  handlerSendsContinue?: boolean;
  /**
   * A request whose headers and body are not complete this long after it started is cut
   * with 408 by Node (requestTimeout; headersTimeout the same). Node checks every
   * connectionsCheckingInterval, 30 s by default: here a tenth of the timeout (100 ms to
   * 1 s), so the cut comes close to the deadline. Unset: Node's defaults (300 s).
   */
  requestTimeoutMs?: number;
}

export async function serve(handler: RequestListener, port: number, host: string, options: ServeOptions = {}): Promise<Serving> {
  const timeout = options.requestTimeoutMs;
  const server = createServer(
    timeout === undefined
      ? {}
      : { requestTimeout: timeout, headersTimeout: timeout, connectionsCheckingInterval: Math.min(1000, Math.max(100, Math.round(timeout / 10))) },
    handler,
  );
  // With a listener, Node neither answers 100 nor emits 'request' for these: the handler does both.
  if (options.handlerSendsContinue) server.on("checkContinue", handler);
  // Longer than typical load balancer idle timeouts, so they close first.
  server.keepAliveTimeout = 65_000;
  server.listen(port, host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost === "0.0.0.0" ? "127.0.0.1" : shownHost}:${address.port}`,
    port: address.port,
    async close(timeoutMs) {
      const closed = new Promise<void>((ok) => server.close(() => ok()));
      // Node >= 19 closes idle keep-alive sockets on close(); busy ones finish their request.
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
      await closed;
      clearTimeout(timer);
    },
  };
}

import type { Server } from "node:http";

/**
 * The child side of `startChild`'s protocol (start-child.ts): serves on a free loopback
 * port, prints the ready line with its URL, and on SIGTERM stops taking requests, runs
 * `onStop`, and exits.
 */
export function serveBenchProcess(server: Server, onStop: () => Promise<unknown> = async () => undefined): void {
  server.keepAliveTimeout = 65_000;
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    process.stdout.write(`${JSON.stringify({ ready: true, url: `http://127.0.0.1:${port}` })}\n`);
  });
  process.once("SIGTERM", () => {
    server.close(() => void onStop().then(() => process.exit(0)));
    server.closeAllConnections();
  });
}

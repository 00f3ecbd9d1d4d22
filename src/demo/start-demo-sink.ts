import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface DemoDelivery {
  eventId: string;
  type: string;
  origin: string;
  /** The route that sent it: the last segment of the URL it was posted to (`routeUrl`). */
  route: string;
}

/**
 * The sample downstream of the demo: accepts every CloudEvent and remembers what came.
 * Each route posts to a URL of its own (`routeUrl(name)`), so that two routes delivering
 * one event read as two deliveries, not as a repeat.
 */
export async function startDemoSink(onDelivery: (delivery: DemoDelivery) => void) {
  const received: DemoDelivery[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const event = JSON.parse(body) as { id: string; type: string };
      const route = decodeURIComponent((req.url ?? "").split("/").at(-1) ?? "");
      const delivery = { eventId: event.id, type: event.type, origin: String(req.headers["x-streamkeeper-origin"]), route };
      received.push(delivery);
      onDelivery(delivery);
      res.writeHead(204).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  return {
    url,
    routeUrl: (route: string) => `${url}/${encodeURIComponent(route)}`,
    received,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

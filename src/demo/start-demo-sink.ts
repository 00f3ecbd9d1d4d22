import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface DemoDelivery {
  eventId: string;
  type: string;
  origin: string;
}

/** The sample downstream of the demo: accepts every CloudEvent and remembers what came. */
export async function startDemoSink(onDelivery: (delivery: DemoDelivery) => void) {
  const received: DemoDelivery[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const event = JSON.parse(body) as { id: string; type: string };
      const delivery = { eventId: event.id, type: event.type, origin: String(req.headers["x-streamkeeper-origin"]) };
      received.push(delivery);
      onDelivery(delivery);
      res.writeHead(204).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    received,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

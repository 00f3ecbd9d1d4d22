import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

export interface ProxyCounts {
  /** requests under the counted path prefix */
  calls: number;
  /** of which pages of a failed-deliveries list (`/deliveries?`) */
  listCalls: number;
  byStatus: Record<string, number>;
  /** wall-clock ms of the first and last counted request */
  firstAt?: number;
  lastAt?: number;
}

export interface CountingProxy {
  url: string;
  counts(): ProxyCounts;
  close(): Promise<void>;
}

/**
 * A pass-through HTTP proxy that counts the requests under `countPrefix` and their
 * answers: the reconcile run reads the achieved call rate and the 429s here, outside
 * the service, as the tenant would see them.
 */
export async function startCountingProxy(target: string, countPrefix: string): Promise<CountingProxy> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const counts: ProxyCounts = { calls: 0, listCalls: 0, byStatus: {} };
  const targetUrl = new URL(target);
  const server = createServer((req, res) => {
    const counted = (req.url ?? "").startsWith(countPrefix);
    if (counted) {
      const now = Date.now();
      counts.calls += 1;
      if ((req.url ?? "").includes("/deliveries?")) counts.listCalls += 1;
      counts.firstAt ??= now;
      counts.lastAt = now;
    }
    const upstream = request(
      { host: targetUrl.hostname, port: targetUrl.port, method: req.method, path: req.url, headers: req.headers, agent },
      (answer) => {
        if (counted) counts.byStatus[answer.statusCode ?? 0] = (counts.byStatus[answer.statusCode ?? 0] ?? 0) + 1;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => structuredClone(counts),
    close: () =>
      new Promise((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

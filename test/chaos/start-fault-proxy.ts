import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface InjectedFault {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: use it where the target's URL would go. */
  url: string;
  /** Answers per status, injected ones and passed-through ones apart. */
  counts: { injected: Record<string, number>; passed: Record<string, number> };
  close(): Promise<void>;
}

/**
 * A small HTTP proxy in front of `target` (e.g. the tenant emulator) that answers some
 * requests itself: `fault(path, method)` returns the answer to inject, or undefined to
 * forward the request as it is; a promise of either holds the request until it settles.
 */
export async function startFaultProxy(target: string, fault: (path: string, method: string) => InjectedFault | undefined | Promise<InjectedFault | undefined>): Promise<FaultProxy> {
  const counts: FaultProxy["counts"] = { injected: {}, passed: {} };
  const count = (bucket: Record<string, number>, status: number) => (bucket[status] = (bucket[status] ?? 0) + 1);
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const injected = await fault(req.url ?? "/", req.method ?? "GET");
    if (injected) {
      count(counts.injected, injected.status);
      res.writeHead(injected.status, { "content-type": "application/json", ...injected.headers }).end(injected.body);
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || ["host", "connection", "content-length", "transfer-encoding"].includes(name)) continue;
      headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    try {
      const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined });
      const body = Buffer.from(await answer.arrayBuffer());
      const out: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (!["content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"].includes(name)) out[name] = value;
      });
      count(counts.passed, answer.status);
      res.writeHead(answer.status, out).end(body);
    } catch {
      count(counts.passed, 502);
      res.writeHead(502).end();
    }
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

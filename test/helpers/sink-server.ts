import { EventEmitter } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real HTTP downstream for tests, on 127.0.0.1 and a free port. It records every
 * request and answers as the test programs it; tests wait on what it received, never
 * on the clock.
 *
 *   const sink = await startSinkServer((request) => (request.index < 3 ? { status: 503 } : {}));
 *   await sink.untilReceived(4);
 *   await sink.until((requests) => requests.filter((r) => r.status === 200).length === 10);
 *   await sink.close();
 */
export interface SinkRequest {
  /** 0 for the first request this sink received */
  index: number;
  method: string;
  /** path and query */
  url: string;
  /** lower-case names, as node:http gives them */
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** set once the answer was sent */
  answeredAt?: number;
  status?: number;
}

export interface SinkAnswer {
  /** @defaultValue 200 */
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** wait this long before answering (a slow downstream) */
  delayMs?: number;
}

/** Decides the answer to one request; may return a promise to hold the request open. */
export type Answerer = (request: SinkRequest) => SinkAnswer | Promise<SinkAnswer>;

export interface SinkServer {
  /** `http://127.0.0.1:<port>/` */
  url: string;
  /** every request so far, in arrival order */
  requests: SinkRequest[];
  /** the current answerer; replace it at any time (e.g. to "fix" the downstream) */
  answer: Answerer;
  /** Resolves once the predicate holds for the requests (checked on each arrival and answer). */
  until(predicate: (requests: SinkRequest[]) => boolean, timeoutMs?: number): Promise<SinkRequest[]>;
  /** Resolves once `count` requests have arrived. */
  untilReceived(count: number, timeoutMs?: number): Promise<SinkRequest[]>;
  /** Closes the server, cutting requests still held open. */
  close(): Promise<void>;
}

/** Answers 200 to everything unless given an answerer. */
export async function startSinkServer(answer: Answerer = () => ({})): Promise<SinkServer> {
  const changes = new EventEmitter().setMaxListeners(0);
  const requests: SinkRequest[] = [];
  const sink = { answer } as SinkServer;

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request: SinkRequest = {
      index: requests.length,
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body: Buffer.concat(chunks).toString("utf8"),
      receivedAt: Date.now(),
    };
    requests.push(request);
    changes.emit("change");
    const reply = await sink.answer(request);
    if (reply.delayMs) await new Promise((ok) => setTimeout(ok, reply.delayMs));
    if (res.destroyed) return;
    const status = reply.status ?? 200;
    res.writeHead(status, reply.headers).end(reply.body ?? "", () => {
      request.answeredAt = Date.now();
      request.status = status;
      changes.emit("change");
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;

  sink.url = `http://127.0.0.1:${port}/`;
  sink.requests = requests;
  sink.until = (predicate, timeoutMs = 120_000) =>
    new Promise((ok, fail) => {
      const check = () => {
        if (!predicate(requests)) return;
        cleanup();
        ok(requests);
      };
      const timer = setTimeout(() => {
        cleanup();
        fail(new Error(`sink ${sink.url}: condition not met within ${timeoutMs} ms (${requests.length} requests received)`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        changes.off("change", check);
      };
      changes.on("change", check);
      check();
    });
  sink.untilReceived = (count, timeoutMs) => sink.until((all) => all.length >= count, timeoutMs);
  sink.close = () =>
    new Promise((ok) => {
      server.close(() => ok());
      server.closeAllConnections();
    });
  return sink;
}

/**
 * The sinks one test starts, closed together after it:
 *
 *   const sinks = createSinkPool();
 *   afterEach(() => sinks.closeAll());
 *   const downstream = await sinks.start((request) => ({ status: 204 }));
 */
export function createSinkPool() {
  const started: SinkServer[] = [];
  return {
    async start(answer?: Answerer): Promise<SinkServer> {
      const sink = await startSinkServer(answer);
      started.push(sink);
      return sink;
    },
    /** Closes one now (an address that then refuses), and not again after the test. */
    async close(sink: SinkServer): Promise<void> {
      started.splice(started.indexOf(sink), 1);
      await sink.close();
    },
    async closeAll(): Promise<void> {
      await Promise.all(started.splice(0).map((sink) => sink.close()));
    },
  };
}

import { startSinkServer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";

export interface SinkDecision {
  status: number;
  /** Hold the request this long before answering (in flight at a kill, or a timeout). */
  delayMs?: number;
}

export interface ChaosSink {
  url: string;
  sink: SinkServer;
  /** Per event id (`webhook-id`): how many requests this downstream accepted (decided 2xx), whether or not the sender saw the answer. */
  accepted(): Map<string, number>;
  /** Resolves once every id has been accepted at least once; rejects at the deadline naming how many are missing. */
  untilAccepted(ids: Iterable<string>, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A downstream for chaos scenarios, on the shared sink server. It counts a request as
 * received by the handler when it decides to answer 2xx, before any delay: a handler
 * that processes on arrival has seen the event even if its sender was killed before the
 * answer arrived. That is the count a repeat (same `webhook-id`) is measured against.
 */
export async function startChaosSink(decide: (request: SinkRequest) => SinkDecision = () => ({ status: 200 })): Promise<ChaosSink> {
  const accepted = new Map<string, number>();
  const sink = await startSinkServer((request) => {
    const decision = decide(request);
    if (decision.status >= 200 && decision.status < 300) {
      const id = String(request.headers["webhook-id"]);
      accepted.set(id, (accepted.get(id) ?? 0) + 1);
    }
    return { status: decision.status, delayMs: decision.delayMs };
  });
  return {
    url: sink.url,
    sink,
    accepted: () => accepted,
    async untilAccepted(ids, timeoutMs) {
      const wanted = [...ids];
      try {
        await sink.until(() => wanted.every((id) => accepted.has(id)), timeoutMs);
      } catch {
        const missing = wanted.filter((id) => !accepted.has(id));
        throw new Error(`${missing.length} of ${wanted.length} acknowledged events never reached ${sink.url} within ${timeoutMs} ms (e.g. ${missing.slice(0, 3).join(", ")})`);
      }
    },
    close: () => sink.close(),
  };
}

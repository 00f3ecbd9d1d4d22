import type { RequestListener } from "node:http";
import { context, propagation, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";

/**
 * One server span per request (`POST /webhooks/:streamId`), the parent of what the request
 * does: BullMQ's `add` spans and, through the job, the delivery. A caller's `traceparent`
 * header continues its trace. The request and response emitters are bound to the span's
 * context, because body chunks arrive on socket callbacks that would otherwise lose it.
 */
export function traceRequests(handler: RequestListener, name: string, tracer: Tracer): RequestListener {
  return (req, res) => {
    const parent = propagation.extract(context.active(), req.headers);
    const path = (req.url ?? "/").split("?")[0]!;
    // The stream id is the one variable path segment: keep span names low-cardinality.
    const route = path.startsWith("/webhooks/") ? "/webhooks/:streamId" : path;
    const span = tracer.startSpan(
      `${req.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method ?? "", "url.path": path, "http.route": route, "server.name": name } },
      parent,
    );
    const active = trace.setSpan(parent, span);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      span.setAttribute("http.response.status_code", res.statusCode);
      // 5xx, or the client went away before the answer was complete.
      if (res.statusCode >= 500 || !res.writableFinished) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.once("finish", end);
    res.once("close", end);
    context.bind(active, req);
    context.bind(active, res);
    context.with(active, () => handler(req, res));
  };
}

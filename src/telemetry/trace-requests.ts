import type { IncomingMessage, RequestListener } from "node:http";
import { context, propagation, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";

/**
 * The template of the route that answered (`/webhooks/:streamId`), never the raw path: span
 * names stay low-cardinality. The router sets `req.route` on the request it matched
 * (Express 5's router); a request no route matched has none.
 */
function routeTemplateOf(req: IncomingMessage): string | undefined {
  const path = (req as IncomingMessage & { route?: { path?: unknown } }).route?.path;
  return typeof path === "string" ? path : undefined;
}

/**
 * One server span per request, named `POST /webhooks/:streamId` after the route that
 * answered, or just `POST` when none did (OpenTelemetry's HTTP span naming), the parent of what the request
 * does: BullMQ's `add` spans and, through the job, the delivery. A caller's `traceparent`
 * header continues its trace. The request and response emitters are bound to the span's
 * context, because body chunks arrive on socket callbacks that would otherwise lose it.
 */
export function traceRequests(handler: RequestListener, name: string, tracer: Tracer): RequestListener {
  return (req, res) => {
    const parent = propagation.extract(context.active(), req.headers);
    const path = (req.url ?? "/").split("?")[0]!;
    const method = req.method ?? "";
    // Named once the route is known, at the end.
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { "http.request.method": method, "url.path": path, "server.name": name } }, parent);
    const active = trace.setSpan(parent, span);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const route = routeTemplateOf(req);
      if (route) {
        span.updateName(`${method} ${route}`);
        span.setAttribute("http.route", route);
      }
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

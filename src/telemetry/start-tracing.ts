import type { RequestListener } from "node:http";
import type { Telemetry } from "bullmq";
import type { Logger } from "../logging/logger.js";

export interface Tracing {
  /**
   * BullMQ's `telemetry` option for every Queue and Worker: a job carries its producer's
   * trace context, so its processing span joins the trace of the webhook that stored it.
   * Undefined when tracing is off, which keeps BullMQ on its untraced path.
   */
  bullmq?: Telemetry;
  /** Wraps an HTTP handler in a server span per request (the handler itself when off). */
  traceRequests(handler: RequestListener, name: string): RequestListener;
  /** Sends the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

const off: Tracing = {
  traceRequests: (handler) => handler,
  shutdown: async () => {},
};

/**
 * OpenTelemetry traces over OTLP/HTTP to `<endpoint>/v1/traces` when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. Unset, nothing is loaded or installed: no SDK, no
 * context manager, no per-job metadata (the setting's "off when unset", config.ts).
 */
export async function startTracing(endpoint: string | undefined, logger: Logger, serviceName = "streamkeeper"): Promise<Tracing> {
  if (!endpoint) return off;
  const [api, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { BullMQOtel }, { traceRequests }] =
    await Promise.all([
      import("@opentelemetry/api"),
      import("@opentelemetry/context-async-hooks"),
      import("@opentelemetry/core"),
      import("@opentelemetry/sdk-trace"),
      import("@opentelemetry/exporter-trace-otlp-http"),
      import("@opentelemetry/resources"),
      import("bullmq-otel"),
      import("./trace-requests.js"),
    ]);

  const url = `${endpoint.replace(/\/+$/, "")}/v1/traces`;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: 1000 })],
  });
  // The API's globals: bullmq-otel and our request spans find the tracer through them.
  const contextManager = new AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  logger.info({ url }, "sending OpenTelemetry traces");

  return {
    bullmq: new BullMQOtel({ tracerName: serviceName }),
    traceRequests: (handler, name) => traceRequests(handler, name, api.trace.getTracer(serviceName)),
    async shutdown() {
      await provider.shutdown().catch((error: Error) => logger.warn({ err: error }, "could not send the last spans"));
      // Let a later start in the same process (tests) install its own.
      api.trace.disable();
      api.propagation.disable();
      api.context.disable();
    },
  };
}

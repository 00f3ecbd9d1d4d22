import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, inject, it } from "vitest";
import { deliveryQueueBullPrefix } from "../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";
import { until } from "../helpers/until.js";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: number | string } }>;
}

/** A stand-in OTLP/HTTP collector: records the spans POSTed to /v1/traces (JSON encoding). */
async function startCollector() {
  const spans: OtlpSpan[] = [];
  const resources: string[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method === "POST" && req.url === "/v1/traces") {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: Array<{ resource: { attributes: OtlpSpan["attributes"] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const resourceSpan of body.resourceSpans) {
        resources.push(...resourceSpan.resource.attributes.filter((a) => a.key === "service.name").map((a) => a.value.stringValue!));
        for (const scope of resourceSpan.scopeSpans) spans.push(...scope.spans);
      }
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    resources,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}


describe("operate: traces", () => {
  const cleanup = useCleanup("all");

  it("when OTEL_EXPORTER_OTLP_ENDPOINT is set, then one trace runs from the webhook request through the queue to the downstream delivery", async () => {
    const collector = await startCollector();
    cleanup.push(() => collector.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    // The whole service: its receiver stores, its dispatcher delivers, both traced.
    const service = await startTestService({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, DOWNSTREAM_URL: sink.url });
    let closed = false;
    cleanup.push(async () => void (closed || (await service.close())));
    const { QUEUE_PREFIX: prefix } = service.config.env;
    const connection = createRedis(inject("redisUrl"), "client");
    await untilReady(connection);
    cleanup.push(async () => connection.disconnect());

    const event = userEvent();
    expect((await service.post(`/webhooks/${event.a0stream}`, JSON.stringify(event))).status).toBe(202);
    await sink.untilReceived(1);
    await until("a process span", () => collector.spans.some((span) => span.name === "process deliver-default"), { everyMs: 50 });

    const server = collector.spans.find((span) => span.name === "POST /webhooks/:streamId")!;
    expect(server, "the webhook's server span").toBeDefined();
    expect(server.parentSpanId || undefined).toBeUndefined();
    // BullMQ names them "<operation> <queue>[.<job name>]"; our job name is the event type.
    const add = collector.spans.find((span) => span.name === "add deliver-default.user.updated")!;
    const process = collector.spans.find((span) => span.name === "process deliver-default")!;
    expect(add.traceId).toBe(server.traceId);
    expect(add.parentSpanId).toBe(server.spanId);
    expect(process.traceId).toBe(server.traceId);
    expect(process.parentSpanId).toBe(add.spanId);
    expect(server.attributes).toContainEqual({ key: "http.response.status_code", value: { intValue: 202 } });
    expect(collector.resources).toContain("streamkeeper");
    // The context travels in the job's stored options (`tm`), so any worker process continues it.
    const opts = await connection.hget(`${deliveryQueueBullPrefix(prefix, "default")}:deliver-default:${event.id}`, "opts");
    expect(JSON.parse(opts!)).toHaveProperty("tm");

    await service.close();
    closed = true;
  });

  it("when requests reach the receiver, then each server span is named after the route template that answered, never the raw path", async () => {
    const collector = await startCollector();
    cleanup.push(() => collector.close());
    const service = await startTestService({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, DOWNSTREAM_URL: "http://127.0.0.1:9/" }, "receiver");
    let closed = false;
    cleanup.push(async () => void (closed || (await service.close())));
    expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    expect((await service.post("/webhooks/est_aD5AUDqZbHFcMoEx2LxAk9/extra", "{}")).status).toBe(404);
    expect((await fetch(`${service.publicUrl}/probe/12345`)).status).toBe(404);
    expect((await fetch(`${service.publicUrl}/readyz`)).status).toBe(200);
    await service.close(); // sends the buffered spans
    closed = true;

    const pathOf = (span: OtlpSpan) => span.attributes.find((a) => a.key === "url.path")?.value.stringValue;
    await until("every server span", () => collector.spans.filter((span) => pathOf(span) !== undefined).length >= 4, { everyMs: 50 });
    const nameOf = (path: string) => collector.spans.find((span) => pathOf(span) === path)?.name;
    expect(nameOf("/webhooks")).toBe("POST /webhooks");
    expect(nameOf("/readyz")).toBe("GET /readyz");
    // Matched no route: the method alone, so a scanner's paths cannot multiply span names.
    expect(nameOf("/webhooks/est_aD5AUDqZbHFcMoEx2LxAk9/extra")).toBe("POST");
    expect(nameOf("/probe/12345")).toBe("GET");
  });

  it("when OTEL_EXPORTER_OTLP_ENDPOINT is unset, then no tracer is installed and jobs carry no trace context", async () => {
    const service = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/" }, "receiver");
    cleanup.push(() => service.close());
    const event = userEvent();
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    const redis = createRedis(inject("redisUrl"), "client");
    cleanup.push(async () => redis.disconnect());
    await untilReady(redis);
    const opts = await redis.hget(`${deliveryQueueBullPrefix(service.config.env.QUEUE_PREFIX, "default")}:deliver-default:${event.id}`, "opts");
    expect(opts).toBeTruthy();
    expect(JSON.parse(opts!)).not.toHaveProperty("tm");
    expect(JSON.parse(opts!)).not.toHaveProperty("telemetry");
  });
});

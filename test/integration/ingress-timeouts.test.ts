import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReceiverApp } from "../../src/http/receiver-app.js";
import { serve, type Serving } from "../../src/http/serve.js";
import { createLogger } from "../../src/logging/logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { webhookAuthorization as basic } from "../helpers/credentials.js";


/** Writes `text` one byte per `everyMs` until the server answers or closes; resolves with the answer and how many bytes were sent. */
async function trickle(port: number, text: string, everyMs: number): Promise<{ answer: string; sent: number }> {
  const socket: Socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  let answer = "";
  let sent = 0;
  let closed = false;
  socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
  socket.on("error", () => {});
  const done = new Promise<void>((ok) => socket.once("close", () => ((closed = true), ok())));
  while (!closed && sent < text.length && answer === "") {
    socket.write(text[sent]!);
    sent++;
    await new Promise((ok) => setTimeout(ok, everyMs));
  }
  await done;
  return { answer, sent };
}

describe("ingress: WEBHOOK_REQUEST_TIMEOUT_MS", () => {
  let sink: SinkServer;
  let service: TestService;
  beforeAll(async () => {
    sink = await startSinkServer();
    service = await startTestService({ DOWNSTREAM_URL: sink.url, WEBHOOK_REQUEST_TIMEOUT_MS: "1000" });
  });
  afterAll(async () => {
    await service.close();
    await sink.close();
  });

  it("when an authenticated body is trickled byte by byte past the timeout, then the request is cut with 408 before the body is complete", async () => {
    const body = JSON.stringify(userEvent());
    const head = `POST /webhooks HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { answer, sent } = await trickle(Number(new URL(service.publicUrl!).port), head + body, 50);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(sent).toBeLessThan(head.length + body.length);
  });

  it("when headers are trickled past the timeout (no credentials yet), then the request is cut with 408", async () => {
    const head = `POST /webhooks HTTP/1.1\r\nHost: x\r\nX-Padding: ${"a".repeat(400)}\r\n\r\n`;
    const { answer, sent } = await trickle(Number(new URL(service.publicUrl!).port), head, 20);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(sent).toBeLessThan(head.length);
  });

  it("when a whole request comes at once, then it is answered as before", async () => {
    expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
  });
});

describe("ingress: the public /readyz", () => {
  let server: Serving;
  let checks = 0;
  beforeAll(async () => {
    const app = createReceiverApp({
      auth: { method: "none" },
      store: { store: () => Promise.reject(new Error("not used")) },
      maxBodyBytes: 1024,
      ready: async () => (checks++, true),
      logger: createLogger("silent"),
    });
    server = await serve(app, 0, "127.0.0.1");
  });
  afterAll(() => server.close(1000));

  it("when /readyz is called many times at once and in a row, then Redis is checked once for them (an answer up to 1 s old)", async () => {
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${server.url}/readyz`)));
    for (let index = 0; index < 50; index++) answers.push(await fetch(`${server.url}/readyz`));
    expect(answers.map((answer) => answer.status)).toEqual(Array(100).fill(200));
    // One check per second that passed at most (however slow the machine), not one per call.
    const seconds = Math.ceil((Date.now() - started) / 1000);
    expect(checks).toBeGreaterThanOrEqual(1);
    expect(checks).toBeLessThanOrEqual(seconds + 1);
    expect(checks).toBeLessThan(100);
  });
});

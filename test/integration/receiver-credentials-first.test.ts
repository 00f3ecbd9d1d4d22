import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { basicAuthorization, webhookAuthorization as goodAuthorization } from "../helpers/credentials.js";

const twoMiB = 2 * 1024 * 1024;
const wrongAuthorization = basicAuthorization(testCredentials.username, "wrong");

/** A raw HTTP/1.1 client: what the server sends, as it arrives, and whether it closed. */
async function rawRequest(url: string, head: string[]) {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  await new Promise<void>((ok, fail) => socket.once("connect", ok).once("error", fail));
  let received = "";
  let ended = false;
  const changed: Array<() => void> = [];
  const notify = () => changed.splice(0).forEach((wake) => wake());
  socket.on("data", (chunk: Buffer) => ((received += chunk.toString("latin1")), notify()));
  socket.on("end", () => ((ended = true), notify()));
  socket.on("close", () => ((ended = true), notify()));
  socket.on("error", () => {}); // a reset after the server closed is expected here
  socket.write(`${head.join("\r\n")}\r\n\r\n`);
  /** Waits on what the socket delivers (no clock), failing after a generous deadline. */
  const until = (what: string, check: () => boolean, timeoutMs = 20_000) =>
    new Promise<void>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`${what} within ${timeoutMs} ms; received so far: ${JSON.stringify(received.slice(0, 300))}`)), timeoutMs);
      const test = () => (check() ? (clearTimeout(timer), ok()) : changed.push(test));
      test();
    });
  return { socket, received: () => received, ended: () => ended, until };
}

describe("receiver: credentials before the body", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/", WEBHOOK_MAX_BODY_BYTES: String(4 * twoMiB) }, "receiver");
  });
  afterAll(() => service.close());

  const head = (authorization: string | undefined, extra: string[] = [], length = twoMiB) => [
    "POST /webhooks/est_38ANnv8pQhqsZrX2VFbftv HTTP/1.1",
    "Host: 127.0.0.1",
    ...(authorization ? [`Authorization: ${authorization}`] : []),
    "Content-Type: application/json",
    `Content-Length: ${length}`,
    ...extra,
  ];

  it("when a request with wrong credentials expects 100-continue, then it gets a 401 and no 100 Continue, and the connection closes", async () => {
    const client = await rawRequest(service.publicUrl!, head(wrongAuthorization, ["Expect: 100-continue"]));
    await client.until("an answer and the connection closed", () => client.ended());
    expect(client.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(client.received()).not.toContain("100 Continue");
  });

  it("when a 2 MiB body comes with wrong credentials, then it is answered 401 before the client finished sending, and the connection is cut rather than waiting for the rest", async () => {
    const client = await rawRequest(service.publicUrl!, head(wrongAuthorization));
    client.socket.write(Buffer.alloc(64 * 1024, "x")); // the start of the body, then nothing more
    // Answered from the headers, while the client still owes ~1.9 MiB.
    await client.until("a 401 before the body was complete", () => /^HTTP\/1\.1 401 /.test(client.received()));
    // Then the server does not wait for the rest (it would, to keep the connection alive).
    await client.until("the connection cut without the rest of the body", () => client.ended());
  });

  it("when a whole body with wrong credentials is sent at once, then the client reads its 401 (no reset destroys it) and may reuse the connection", async () => {
    const client = await rawRequest(service.publicUrl!, head(wrongAuthorization));
    client.socket.write(Buffer.alloc(twoMiB, "x"));
    await client.until("the 401", () => /^HTTP\/1\.1 401 [\s\S]*\r\n\r\n[\s\S]*"status":401/.test(client.received()));
    // The body was discarded as it came: the same connection answers the next request.
    client.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await client.until("the next answer on the same connection", () => /HTTP\/1\.1 200 /.test(client.received()));
    expect(client.ended()).toBe(false);
    client.socket.destroy();
  });

  it("when the credentials are right and the request expects 100-continue, then it gets 100 Continue, then its 202", async () => {
    const event = JSON.stringify(userEvent());
    const client = await rawRequest(service.publicUrl!, head(goodAuthorization, ["Expect: 100-continue"], Buffer.byteLength(event)));
    await client.until("100 Continue", () => client.received().includes("\r\n\r\n"));
    expect(client.received()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    client.socket.write(event);
    await client.until("the 202", () => /HTTP\/1\.1 202 /.test(client.received()));
    client.socket.destroy();
  });

  it("when a missing-credentials request expects 100-continue, then it gets a 401 and no 100 Continue", async () => {
    const client = await rawRequest(service.publicUrl!, head(undefined, ["Expect: 100-continue"]));
    await client.until("an answer and the connection closed", () => client.ended());
    expect(client.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(client.received()).not.toContain("100 Continue");
  });
});

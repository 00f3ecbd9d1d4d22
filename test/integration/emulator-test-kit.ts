import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import type { Emulator } from "../../src/emulator/start-emulator.js";

/** Helpers shared by the emulator's integration tests (not a test file itself). */

/** The emulator's control API (no auth): GET without a body, POST with one, or the method given. */
export async function control<T>(emulator: Emulator, path: string, body?: unknown, method = body === undefined ? "GET" : "POST"): Promise<T> {
  const response = await fetch(`${emulator.url}/emulator${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.ok, `${path}: ${response.status}`).toBe(true);
  return (await response.json()) as T;
}

/** The settings that point the service at the emulator with its global client. */
export function tenantEnv(emulator: Emulator): Record<string, string> {
  return {
    MGMT_API_BASE_URL: emulator.apiBaseUrl,
    MGMT_TOKEN_URL: emulator.tokenUrl,
    MGMT_CLIENT_ID: "emulator-client",
    MGMT_CLIENT_SECRET: "emulator-secret",
  };
}

export { clientToken as getToken } from "../helpers/tenant-pace.js";

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

/** A JSON call to the emulator; `path` is relative to its url (`/api/v2/...`, `/emulator/...`). */
export async function call(emulator: Emulator, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (typeof options.body === "string") body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const response = await fetch(`${emulator.url}${path}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

export type Auth =
  | { method: "basic"; username: string; password: string }
  | { method: "bearer"; token: string }
  | { method: "custom_header"; header_key: string; header_value: string };

/** A stream created through the control API, subscribed to `types`. */
export async function createStream(emulator: Emulator, endpoint: string, options: { auth?: Auth; types?: string[]; name?: string } = {}): Promise<string> {
  const answer = await call(emulator, "POST", "/emulator/streams", {
    body: {
      name: options.name ?? "test stream",
      subscriptions: (options.types ?? ["user.created"]).map((event_type) => ({ event_type })),
      destination: { type: "webhook", configuration: { webhook_endpoint: endpoint, webhook_authorization: options.auth ?? { method: "bearer", token: "t0ken" } } },
    },
  });
  if (answer.status !== 201) throw new Error(`stream creation answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

export async function emit(emulator: Emulator, type = "user.created", data: unknown = { object: { user_id: "auth0|1" } }): Promise<string> {
  const answer = await call(emulator, "POST", "/emulator/events", { body: { type, data } });
  if (answer.status !== 202) throw new Error(`emit answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

export interface ControlDelivery {
  event_stream_id: string;
  event_id: string;
  status: "pending" | "failed" | "succeeded";
  attempts: { status: string; timestamp: string; error_message?: string; duration?: number }[];
}

/** Polls the control API until the delivery of `eventId` is done (succeeded or failed), with a deadline. */
export async function settled(emulator: Emulator, eventId: string, timeoutMs = 20_000): Promise<ControlDelivery> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await call(emulator, "GET", `/emulator/deliveries?event_id=${eventId}`);
    const delivery = (answer.body as { deliveries: ControlDelivery[] }).deliveries[0];
    if (delivery && delivery.status !== "pending") return delivery;
    if (Date.now() > deadline) throw new Error(`delivery of ${eventId} still ${delivery?.status ?? "absent"} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface SinkRequest {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Sink {
  url: string;
  requests: SinkRequest[];
  close(): Promise<void>;
}

/**
 * A real webhook receiver on 127.0.0.1, port 0; `answer` picks the status of the n-th
 * request (0-based), or "hang" to never answer it.
 */
export async function startSink(answer: (n: number, request: IncomingMessage) => number | "hang"): Promise<Sink> {
  const requests: SinkRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const n = requests.length;
      requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), at: performance.now() });
      const status = answer(n, req);
      if (status === "hang") return;
      res.statusCode = status;
      res.end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

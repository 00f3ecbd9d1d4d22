import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import type { WebhookAuthorization } from "./stream-schemas.js";

export interface AttemptOutcome {
  ok: boolean;
  /** A 4xx answer: the delivery fails at once, with no retry (docs/tenant.md#webhook-delivery). */
  final: boolean;
  /** Worded as real records word them: `HTTP 503`, `Post "<url>": context deadline exceeded`. */
  errorMessage?: string;
  /** Milliseconds. */
  duration: number;
}

/** The header the tenant sends for each authorization method (docs/tenant.md#webhook-delivery). */
export function authorizationHeader(auth: WebhookAuthorization): [string, string] {
  switch (auth.method) {
    case "basic":
      return ["Authorization", `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}`];
    case "bearer":
      return ["Authorization", `Bearer ${auth.token}`];
    case "custom_header":
      return [auth.header_key, auth.header_value];
  }
}

/** One delivery attempt: one CloudEvent, JSON structured mode, one POST on a fresh connection. */
export async function sendWebhook(
  endpoint: string,
  auth: WebhookAuthorization,
  body: string,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<AttemptOutcome> {
  const started = performance.now();
  // A controller per attempt, tied to the long-lived stop signal by a listener removed
  // when the attempt ends: AbortSignal.any on that signal leaks (nodejs/node#55351).
  const attempt = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    attempt.abort();
  }, options.timeoutMs);
  const stop = () => attempt.abort();
  options.signal.addEventListener("abort", stop, { once: true });
  const [name, value] = authorizationHeader(auth);
  const send = endpoint.startsWith("https:") ? httpsRequest : httpRequest;
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const request = send(endpoint, {
        method: "POST",
        agent: false,
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body), "User-Agent": "streamkeeper-emulator", [name]: value },
        signal: attempt.signal,
      });
      request.on("error", reject);
      request.on("response", (response) => {
        response.on("error", reject);
        response.on("end", () => resolve(response.statusCode ?? 0));
        response.resume();
      });
      request.end(body);
    });
    const duration = performance.now() - started;
    if (status >= 200 && status < 300) return { ok: true, final: false, duration };
    return { ok: false, final: status >= 400 && status < 500, errorMessage: `HTTP ${status}`, duration };
  } catch (error) {
    const reason = timedOut ? "context deadline exceeded" : networkReason(endpoint, error);
    return { ok: false, final: false, errorMessage: `Post "${endpoint}": ${reason}`, duration: performance.now() - started };
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener("abort", stop);
  }
}

/** Network errors in the words of the tenant's (Go) HTTP client. */
function networkReason(endpoint: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const { host, hostname } = new URL(endpoint);
  if (code === "ECONNREFUSED") return `dial tcp ${host}: connect: connection refused`;
  if (code === "ECONNRESET") return "read: connection reset by peer";
  if (code === "ENOTFOUND") return `dial tcp: lookup ${hostname}: no such host`;
  return error instanceof Error ? error.message : String(error);
}

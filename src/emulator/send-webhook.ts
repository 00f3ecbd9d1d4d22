import { performance } from "node:perf_hooks";
import type { WebhookAuthorization } from "./stream-schemas.js";

export interface AttemptOutcome {
  ok: boolean;
  /** A 4xx answer: the delivery fails at once, with no retry (real-world.md, "Webhook delivery"). */
  final: boolean;
  /** Worded as real records word them: `HTTP 503`, `Post "<url>": context deadline exceeded`. */
  errorMessage?: string;
  /** Milliseconds. */
  duration: number;
}

/** The header the tenant sends for each authorization method (real-world.md, "Webhook delivery"). */
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

/** One delivery attempt: one CloudEvent, JSON structured mode, one POST. */
export async function sendWebhook(
  endpoint: string,
  auth: WebhookAuthorization,
  body: string,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<AttemptOutcome> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const [name, value] = authorizationHeader(auth);
  try {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json", "User-Agent": "streamkeeper-emulator", [name]: value },
      body,
      redirect: "manual",
      signal: AbortSignal.any([timeout, options.signal]),
    });
    await response.arrayBuffer();
    const duration = performance.now() - started;
    if (response.status >= 200 && response.status < 300) return { ok: true, final: false, duration };
    return { ok: false, final: response.status >= 400 && response.status < 500, errorMessage: `HTTP ${response.status}`, duration };
  } catch (error) {
    const reason = timeout.aborted ? "context deadline exceeded" : networkReason(endpoint, error);
    return { ok: false, final: false, errorMessage: `Post "${endpoint}": ${reason}`, duration: performance.now() - started };
  }
}

/** Network errors in the words of the tenant's (Go) HTTP client. */
function networkReason(endpoint: string, error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error ? (error.cause as NodeJS.ErrnoException) : undefined;
  const host = new URL(endpoint).host;
  if (cause?.code === "ECONNREFUSED") return `dial tcp ${host}: connect: connection refused`;
  if (cause?.code === "ECONNRESET") return "read: connection reset by peer";
  if (cause?.code === "ENOTFOUND") return `dial tcp: lookup ${new URL(endpoint).hostname}: no such host`;
  return cause?.message ?? (error instanceof Error ? error.message : String(error));
}

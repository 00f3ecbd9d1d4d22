import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { redactSecrets } from "../redact-secrets.js";
import type { AttemptResult } from "./retry-policy.js";
import type { Route } from "../routes/route.js";

export interface DownstreamClient {
  /** One POST to the route's url; never rejects: a missing answer is `{ error }`. */
  post(headers: Record<string, string>, body: string): Promise<AttemptResult>;
  /** Cuts every request in flight (shutdown past its deadline); each resolves `{ error }`. */
  abortAll(): void;
  close(): void;
}

/** How much of an error answer's body goes into the job's failed reason. */
const detailChars = 200;

/**
 * The HTTP client of one route: node:http with a keep-alive agent of `concurrency`
 * sockets, so steady delivery reuses connections instead of a TCP (and TLS) handshake
 * per event. Each attempt is bounded by the route's `timeoutMs`. A plain timer rather
 * than `AbortSignal.any([timeout, shutdown])`: combining with a long-lived signal leaks
 * on Node 20-22 (nodejs/node#55351), and a timer is cheaper per request.
 */
export function createDownstreamClient(route: Route): DownstreamClient {
  const url = new URL(route.url);
  const secure = url.protocol === "https:";
  const agentOptions = { keepAlive: true, maxSockets: route.concurrency, maxFreeSockets: route.concurrency };
  const agent = secure ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  const send = secure ? httpsRequest : httpRequest;
  const inFlight = new Set<ClientRequest>();
  // Failed reasons go to logs, dead letters and the dashboard: never with the route's
  // credentials. The URL is named without user info or query (keys often ride there),
  // and an error body is cleaned of what we sent, since some downstreams echo it back
  // (found by test/integration/secrets-never-leak.test.ts).
  const where = `${url.protocol}//${url.host}${url.pathname}`;
  const secrets = routeSecrets(route, url);
  return {
    post(headers, body) {
      return new Promise<AttemptResult>((resolve) => {
        const request = send(url, { method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } });
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          request.destroy();
        }, route.timeoutMs);
        inFlight.add(request);
        const finish = (result: AttemptResult) => {
          clearTimeout(timer);
          inFlight.delete(request);
          resolve(result);
        };
        const onError = (error: NodeJS.ErrnoException) =>
          finish({
            error: timedOut
              ? `no answer within ${route.timeoutMs} ms (the route's timeoutMs)`
              : `POST ${where} failed: ${redactSecrets(error.code ?? error.message, secrets)}`,
          });
        request.on("error", onError);
        request.on("response", (response) => {
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          if (ok) {
            // The status is the answer: a slow body must not turn a delivered event into
            // a timeout and a repeat. Drain it (so the socket returns to the pool), bounded.
            finish({ status });
            const drain = setTimeout(() => response.destroy(), route.timeoutMs);
            response.on("close", () => clearTimeout(drain));
            response.on("error", () => {});
            response.resume();
            return;
          }
          let detail = "";
          response.on("error", onError);
          response.setEncoding("utf8");
          // Read the whole answer so the socket goes back to the pool; keep a little
          // of an error answer for the failed reason.
          response.on("data", (chunk: string) => {
            if (detail.length < detailChars) detail += chunk;
          });
          response.on("end", () => finish({ status, retryAfter: header(response.headers, "retry-after"), detail: oneLine(redactSecrets(detail, secrets)) || undefined }));
        });
        request.end(body);
      });
    },
    abortAll() {
      for (const request of inFlight) request.destroy();
    },
    close: () => agent.destroy(),
  };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Everything of the route that may be a credential: header values (also without their scheme), the signing secret, the URL's user info and query values. */
function routeSecrets(route: Route, url: URL): string[] {
  const headerValues = Object.values(route.headers).flatMap((value) => [value, value.replace(/^\S+\s+/, "")]);
  const urlParts = [url.username, url.password].flatMap((part) => [part, safeDecode(part)]);
  const signing = route.secret ? [route.secret, route.secret.replace(/^whsec_/, "")] : [];
  // Longest first, so a value is not half-cut by a shorter one inside it.
  return [...headerValues, ...urlParts, ...url.searchParams.values(), ...signing].sort((a, b) => b.length - a.length);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, detailChars);
}

import type { IncomingHttpHeaders } from "node:http";
import { Pool } from "undici";
import { redactSecrets } from "../logging/redact-secrets.js";
import type { AttemptResult } from "./retry-policy.js";
import { headerFault } from "../routes/header-fault.js";
import type { Route } from "../routes/route.js";

export interface DownstreamClient {
  /** One POST to the route's url; never rejects: a missing answer is `{ error }`. */
  post(headers: Record<string, string>, body: string): Promise<AttemptResult>;
  /** Cuts every request in flight (shutdown past its deadline); each resolves `{ error }`. */
  abortAll(): void;
  /** Requests sent and not yet answered. */
  inFlight(): number;
  close(): void;
}

/** How much of an error answer's body goes into the job's failed reason. */
const detailChars = 200;

/** undici's codes for a connection, an answer or an answer's body that took too long. */
const timeoutCodes = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/**
 * The HTTP client of one route: an undici pool of `concurrency` keep-alive connections, so
 * steady delivery reuses connections instead of a TCP (and TLS) handshake per event. undici
 * rather than node:http: about half the CPU per request (docs/benchmarks.md). Each attempt
 * has one deadline, `timeoutMs` from its start until the answer (for an error answer,
 * until its body was read), as the dropStale lease assumes (stale-guard.ts); undici's own
 * per-phase timeouts stay as a backstop, and bound a 2xx's body read in the background.
 */
export function createDownstreamClient(route: Route): DownstreamClient {
  const url = new URL(route.url);
  const timeoutMs = route.timeoutMs;
  const pool = new Pool(url.origin, { connections: route.concurrency, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const path = `${url.pathname}${url.search}`;
  // node:http sent a URL's user info as basic credentials; so do we, unless the route has its own.
  const userInfo = url.username || url.password ? `Basic ${Buffer.from(`${safeDecode(url.username)}:${safeDecode(url.password)}`).toString("base64")}` : undefined;
  const inFlight = new Set<AbortController>();
  // Failed reasons go to logs, dead letters and the dashboard: never with the route's
  // credentials. The URL is named by its origin alone, as routes are published: user info,
  // query and path can each carry a key (a Slack-style hook's path is its secret). An error
  // body is cleaned of what we sent, since some downstreams echo it back (found by
  // test/integration/secrets-never-leak.test.ts).
  const where = url.origin;
  const secrets = routeSecrets(route, url);
  const failure = (error: NodeJS.ErrnoException, deadline: AbortController): AttemptResult => {
    if (deadline.signal.reason === shutdownCut) return { error: "cut by the shutdown deadline before an answer came" };
    if (deadline.signal.aborted || timeoutCodes.has(error.code ?? "")) return { error: `no answer within ${timeoutMs} ms (the route's timeoutMs)` };
    return { error: `POST ${where} failed: ${redactSecrets(error.code?.startsWith("UND_ERR") ? error.message : (error.code ?? error.message), secrets)}` };
  };
  return {
    async post(headers, body) {
      const sent = userInfo && !("authorization" in headers) ? { ...headers, authorization: userInfo } : headers;
      // undici never frees the connection slot of a request it refused for its headers: a
      // few such requests would stall the route for good. So they never reach it.
      const refused = unsendableHeader(sent);
      if (refused) return { error: refused, permanent: true };
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), timeoutMs);
      inFlight.add(deadline);
      try {
        const answer = await pool.request({ path, method: "POST", headers: sent, body, signal: deadline.signal });
        const status = answer.statusCode;
        if (status >= 200 && status < 300) {
          // The status is the answer: a slow body must not turn a delivered event into a
          // timeout and a repeat. Read it in the background (the connection goes back to the
          // pool), bounded by bodyTimeout.
          clearTimeout(timer);
          answer.body.dump().catch(() => {});
          return { status };
        }
        // Read the whole answer so the connection goes back to the pool; keep a little of
        // it for the failed reason.
        let detail = "";
        answer.body.setEncoding("utf8");
        for await (const chunk of answer.body as AsyncIterable<string>) {
          if (detail.length < detailChars) detail += chunk;
        }
        return { status, retryAfter: header(answer.headers, "retry-after"), detail: oneLine(redactSecrets(detail, secrets)) || undefined };
      } catch (error) {
        return failure(error as NodeJS.ErrnoException, deadline);
      } finally {
        clearTimeout(timer);
        inFlight.delete(deadline);
      }
    },
    abortAll() {
      for (const deadline of inFlight) deadline.abort(shutdownCut);
    },
    inFlight: () => inFlight.size,
    close: () => void pool.close().catch(() => {}),
  };
}

/** The abort reason of `abortAll`, told apart from a deadline. */
const shutdownCut = new Error("shutdown deadline");

/** Why a header cannot be sent, in our words; undefined when all can. */
function unsendableHeader(headers: Record<string, string>): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    const fault = headerFault(name, value);
    if (fault) return `the ${name} header cannot be sent: its ${fault === "value" ? "value has a character HTTP headers cannot carry" : "name is not a valid header name"}; fix the route's headers or the event`;
  }
  return undefined;
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

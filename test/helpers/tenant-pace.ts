import type { Emulator } from "../../src/emulator/start-emulator.js";

/** An access token for a client of the emulator (client credentials, docs/tenant.md#tokens). */
export async function clientToken(emulator: Emulator, clientId = "emulator-client", clientSecret = "emulator-secret"): Promise<string> {
  const response = await fetch(emulator.tokenUrl, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret, audience: emulator.audience }),
  });
  if (response.status !== 200) throw new Error(`token request answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** A caller's calls as the emulator counted them (`GET /emulator/calls`). */
interface CallerCalls {
  caller: string;
  accepted: number;
  refused: number;
  acceptedPerSecond: Record<string, number>;
  lowestRemaining?: number;
}

export interface PaceFigures {
  accepted: number;
  refused: number;
  /** first to last accepted call, whole seconds */
  spanSeconds: number;
  /** the seconds measured: after the first 5, the last (partial) one left out */
  steadySeconds: number;
  /** accepted per second over the steady seconds (0 when there are none) */
  perSecond: number;
  /** the median and the busiest one-second count of the steady seconds */
  median: number;
  busiest: number;
  /** the fewest requests the caller's calls left in the tenant's bucket */
  lowestRemaining?: number;
}

/**
 * One caller's pace as the tenant counted it: per second accepted after the first 5 s of
 * its calls (first to last accepted call; the last, partial second left out), and the
 * 429s. Zeros for a caller that made no call. The reconcile-pace test and bench read it.
 */
export async function paceFigures(emulator: Emulator, caller: string): Promise<PaceFigures> {
  const response = await fetch(`${emulator.url}/emulator/calls`);
  if (!response.ok) throw new Error(`emulator GET /calls answered ${response.status}: ${await response.text()}`);
  const { callers } = (await response.json()) as { callers: CallerCalls[] };
  const entry = callers.find((candidate) => candidate.caller === caller);
  if (!entry) return { accepted: 0, refused: 0, spanSeconds: 0, steadySeconds: 0, perSecond: 0, median: 0, busiest: 0 };
  const seconds = Object.keys(entry.acceptedPerSecond).map(Number);
  const first = Math.min(...seconds);
  const last = Math.max(...seconds);
  const windows: number[] = [];
  for (let second = first + 5; second < last; second++) windows.push(entry.acceptedPerSecond[String(second)] ?? 0);
  const steady = windows.reduce((sum, calls) => sum + calls, 0);
  const steadySeconds = last - first - 5;
  const sorted = [...windows].sort((a, b) => a - b);
  const median = sorted.length === 0 ? 0 : sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  return {
    accepted: entry.accepted,
    refused: entry.refused,
    spanSeconds: last - first + 1,
    steadySeconds,
    perSecond: steadySeconds > 0 ? steady / steadySeconds : 0,
    median,
    busiest: Math.max(0, ...windows),
    lowestRemaining: entry.lowestRemaining,
  };
}

/**
 * Another application of the tenant: `perSecond` calls a second from its own client, kept to
 * that count from its start (a late timer catches up by at most 10 calls, never in a burst).
 */
export function spendFromTheBucket(emulator: Emulator, token: string, perSecond: number): { stop(): Promise<void> } {
  const started = performance.now();
  let sent = 0;
  let stopped: Promise<void> | undefined;
  const inFlight = new Set<Promise<unknown>>();
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    sent = Math.max(sent, due - 10);
    while (sent < due && inFlight.size < 20) {
      sent++;
      const request = fetch(`${emulator.apiBaseUrl}/event-streams`, { headers: { authorization: `Bearer ${token}` } })
        .then((response) => response.text())
        .catch(() => undefined);
      inFlight.add(request);
      void request.finally(() => inFlight.delete(request));
    }
  }, 5);
  return {
    stop: () => (stopped ??= (clearInterval(timer), Promise.all(inFlight).then(() => undefined))),
  };
}

import { Counter, Gauge } from "prom-client";
import { registry } from "./registry.js";

/** The pull's metrics (README.md#pulling-events-pull-on), in the one registry. */
export const pullConnected = new Gauge({
  name: "streamkeeper_pull_connected",
  help: "1 while this process holds an open connection to the tenant's Events API",
  registers: [registry],
});

export const pullEvents = new Counter({
  name: "streamkeeper_pull_events_total",
  help: "Events read from the tenant's Events API, by result (stored, duplicate: the ledger had it; poison: unreadable, kept aside as a pull dead letter)",
  labelNames: ["result"] as const,
  registers: [registry],
});

export const pullReconnects = new Counter({
  name: "streamkeeper_pull_reconnects_total",
  help: "Connections to the Events API ended or refused, by reason (cycled: the tenant's periodic close; error; expired: 410; rate_limited: 429; auth: 401/403)",
  labelNames: ["reason"] as const,
  registers: [registry],
});

let lastMessageAt: number | undefined;

/** Notes a message read now (an event or an offset-only marker), for pull_lag_seconds. */
export function notePullMessage(at = Date.now()): void {
  lastMessageAt = at;
}

/** This process no longer holds the pull: its lag is no longer reported (another worker's is). */
export function forgetPullMessages(): void {
  lastMessageAt = undefined;
}

export const pullLag = new Gauge({
  name: "streamkeeper_pull_lag_seconds",
  help: "Now minus the time the last message (event or offset-only marker) was read from the Events API by this process; absent until the first",
  registers: [registry],
  collect() {
    if (lastMessageAt === undefined) return void this.reset();
    this.set((Date.now() - lastMessageAt) / 1000);
  },
});

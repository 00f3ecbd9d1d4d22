import { setMaxListeners } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { Delivery, DeliveryStore, TenantEvent } from "./delivery-store.js";
import type { EventLog } from "./event-log.js";
import { jsonText } from "../events/json-text.js";
import { newId } from "./new-id.js";
import { sendWebhook } from "./send-webhook.js";
import type { StoredStream, StreamStore } from "./stream-store.js";

/** 4 attempts in all: retries after about 1 s, 2 s and 4 s (docs/tenant.md#webhook-delivery). */
const retryDelaysMs = [1000, 2000, 4000];

export interface DeliveryEngineOptions {
  streams: StreamStore;
  deliveries: DeliveryStore;
  tenantName: string;
  /** Multiplies the retry delays: 0.01 makes them 10, 20, 40 ms. */
  timeScale: number;
  webhookTimeoutMs: number;
  /** A stream is disabled after this many consecutive failed deliveries (real: 500)... */
  disableAfterConsecutiveFailures: number;
  /** ...or this many failed deliveries in all (real: 5000). */
  disableAfterTotalFailures: number;
  /** The tenant's log of every emitted event, served by `GET /api/v2/events`. */
  log?: EventLog;
}

export interface DeliveryEngine {
  /** Pushes one new event to every enabled stream subscribed to its type. */
  emit(type: string, data: Record<string, unknown>): { id: string; streams: string[] };
  /**
   * The tenant's "send a test event" (`POST /event-streams/{id}/test`): one event to that
   * stream alone, marked `a0purpose: "test"`, kept out of the event log (GET /events).
   */
  sendTest(stream: StoredStream, type: string, data: Record<string, unknown>): Delivery;
  /** A new round of attempts for a failed delivery, after a `retrying` marker. */
  redeliver(delivery: Delivery): void;
  /** Stops every round: pending timers and requests in flight are abandoned. */
  close(): Promise<void>;
}

export function createDeliveryEngine(options: DeliveryEngineOptions): DeliveryEngine {
  const stop = new AbortController();
  // Every attempt in flight listens on it (send-webhook.ts) and removes its listener when
  // done: more than ten at once is the normal case, not the leak Node's warning suspects.
  setMaxListeners(0, stop.signal);
  const rounds = new Set<Promise<void>>();

  function start(delivery: Delivery): void {
    const round = runRound(delivery).finally(() => rounds.delete(round));
    rounds.add(round);
  }

  async function runRound(delivery: Delivery): Promise<void> {
    delivery.status = "pending";
    for (let attempt = 0; ; attempt++) {
      // The stream's current destination: an update between attempts takes effect at once.
      const stream = options.streams.get(delivery.event_stream_id);
      if (!stream) return;
      const { webhook_endpoint, webhook_authorization } = stream.destination.configuration;
      const timestamp = new Date().toISOString();
      const outcome = await sendWebhook(webhook_endpoint, webhook_authorization, jsonText(delivery.event), {
        timeoutMs: options.webhookTimeoutMs,
        signal: stop.signal,
      });
      if (stop.signal.aborted) return;
      if (outcome.ok) {
        delivery.attempts.push({ status: "succeeded", timestamp, duration: outcome.duration });
        delivery.status = "succeeded";
        stream.failures.consecutive = 0;
        return;
      }
      delivery.attempts.push({ status: "failed", timestamp, error_message: outcome.errorMessage, duration: outcome.duration });
      const delay = retryDelaysMs[attempt];
      if (outcome.final || delay === undefined) return failForGood(delivery, stream);
      try {
        await sleep(delay * options.timeScale, undefined, { signal: stop.signal });
      } catch {
        return;
      }
    }
  }

  const source = `urn:auth0:${options.tenantName}.emulator`;
  function deliver(stream: StoredStream, event: TenantEvent): Delivery {
    const delivery: Delivery = { id: event.id, event_stream_id: stream.id, event_type: event.type, status: "pending", attempts: [], event, created_at: event.time };
    options.deliveries.add(delivery);
    start(delivery);
    return delivery;
  }

  function failForGood(delivery: Delivery, stream: StoredStream): void {
    delivery.status = "failed";
    stream.failures.consecutive += 1;
    stream.failures.total += 1;
    // Auto-disable (docs/tenant.md#webhook-delivery): a disabled stream gets no events until re-enabled.
    if (stream.failures.consecutive >= options.disableAfterConsecutiveFailures || stream.failures.total >= options.disableAfterTotalFailures) {
      stream.status = "disabled";
    }
  }

  return {
    emit(type, data) {
      const id = newId("evt_");
      const time = new Date().toISOString();
      // Every event emitted goes to the log, whatever the streams do (a disabled stream too).
      options.log?.append({ id, source, specversion: "1.0", type, time, data, a0tenant: options.tenantName });
      const targets = options.streams
        .all()
        .filter((stream) => stream.status === "enabled" && stream.subscriptions.some((subscription) => subscription.event_type === type));
      for (const stream of targets) deliver(stream, { id, source, specversion: "1.0", type, time, data, a0tenant: options.tenantName, a0stream: stream.id });
      return { id, streams: targets.map((stream) => stream.id) };
    },

    sendTest(stream, type, data) {
      return deliver(stream, { id: newId("evt_"), source, specversion: "1.0", type, time: new Date().toISOString(), data, a0tenant: options.tenantName, a0stream: stream.id, a0purpose: "test" });
    },

    redeliver(delivery) {
      delivery.attempts.push({ status: "retrying", timestamp: new Date().toISOString() });
      delivery.status = "pending";
      start(delivery);
    },

    async close() {
      stop.abort();
      await Promise.allSettled([...rounds]);
    },
  };
}

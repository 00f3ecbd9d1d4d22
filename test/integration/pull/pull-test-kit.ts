import { Redis } from "ioredis";
import { expect, inject } from "vitest";
import { pullKey } from "../../../src/pull/pull-state.js";
import { startEmulator, type Emulator } from "../../../src/emulator/start-emulator.js";
import { startSinkServer, type SinkRequest, type SinkServer } from "../../helpers/sink-server.js";
import type { Cleanup } from "../../helpers/cleanup.js";
import { startTestService, type TestService } from "../../helpers/start-test-service.js";
import { tenantEnv } from "../emulator-test-kit.js";
import { adminHeaders } from "../../helpers/credentials.js";

/** Helpers shared by the pull's tests (not a test file itself). */

export const adminToken = "pull-admin-token";

/** The settings of a service that pulls from `emulator`; `env` adds or overrides any. */
export function pullEnv(emulator: Emulator, sinkUrl: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    ...tenantEnv(emulator),
    PULL: "on",
    DOWNSTREAM_URL: sinkUrl,
    ADMIN_TOKEN: adminToken,
    RECONCILE_SWEEP_INTERVAL_SECONDS: "0",
    STREAM_WATCH_INTERVAL_SECONDS: "0",
    PULL_FAILOVER_SECONDS: "2",
    ...env,
  };
}

/** An emulator (heartbeats every 0.2 s), a sink and a service pulling from the one to the other, each closed by `cleanup`. */
export async function startPulling(cleanup: Pick<Cleanup, "push">): Promise<{ emulator: Emulator; sink: SinkServer; service: TestService }> {
  const emulator = await startEmulator({ eventsHeartbeatSeconds: 0.2 });
  cleanup.push(() => emulator.close());
  const sink = await startSinkServer();
  cleanup.push(() => sink.close());
  const service = await startTestService(pullEnv(emulator, sink.url));
  cleanup.push(() => service.close());
  return { emulator, sink, service };
}

/** Emits `count` events of `type` in one call to the emulator's control API; their ids in order of emission. */
export async function emitMany(emulator: Emulator, count: number, type = "user.created"): Promise<string[]> {
  return (await emitWithOffsets(emulator, count, type)).ids;
}

/** Emits `count` events; their ids and their offsets in the tenant's log. */
export async function emitWithOffsets(emulator: Emulator, count: number, type = "user.created"): Promise<{ ids: string[]; offsets: string[] }> {
  const response = await fetch(`${emulator.url}/emulator/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type, data: { object: { user_id: "auth0|pulled" } }, count }),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as { ids: string[]; offsets: string[] };
}

export interface EventsApiView {
  open: number;
  maxOpen: number;
  attempts: Record<string, number>;
  /** The last 200 requests: when each came, and its status. */
  recent: Array<{ at: number; status: number }>;
  down: boolean;
  head: string;
}

export async function eventsApi(emulator: Emulator): Promise<EventsApiView> {
  return (await (await fetch(`${emulator.url}/emulator/events-api`)).json()) as EventsApiView;
}

export async function setEventsApiDown(emulator: Emulator, down: boolean): Promise<void> {
  await changeEventsApi(emulator, { down });
}

/** The emulator's control API of the Events API: an outage, an expiry, a 429's wait, a terminal `event: error`. */
export async function changeEventsApi(emulator: Emulator, change: { down?: boolean; expire_through?: string; retry_after_seconds?: number; end_with_error?: string; markers?: boolean }): Promise<void> {
  const response = await fetch(`${emulator.url}/emulator/events-api`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(change) });
  expect(response.status).toBe(200);
}

/** Deliveries per event id, with the origin header of each. */
export function deliveriesById(requests: SinkRequest[]): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const request of requests) {
    const id = String(request.headers["webhook-id"]);
    seen.set(id, [...(seen.get(id) ?? []), String(request.headers["x-streamkeeper-origin"])]);
  }
  return seen;
}

export interface PullStatusView {
  state: string;
  offsetAt: string | null;
  lastEventAt: string | null;
  lastError: string | null;
  holder: string | null;
  poison: { count: number; newest: Array<{ offset?: string; reason: string; raw: string; at: string }> };
}

export async function pullStatus(adminUrl: string): Promise<PullStatusView> {
  const answer = await fetch(`${adminUrl}/admin/pull`, { headers: adminHeaders(adminToken) });
  expect(answer.status).toBe(200);
  return (await answer.json()) as PullStatusView;
}

/** One sample's value from a /metrics text (0 when absent). */
export function metricValue(metrics: string, name: string, labels = ""): number {
  const prefix = labels ? `${name}{${labels}}` : `${name} `;
  const line = metrics.split("\n").find((text) => text.startsWith(prefix));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

export async function metricsOf(adminUrl: string): Promise<string> {
  return (await fetch(`${adminUrl}/metrics`)).text();
}

/** The offset the service keeps in Redis (read directly, as a crash would leave it). */
export async function keptOffset(queuePrefix: string): Promise<string | null> {
  const redis = new Redis(inject("redisUrl"));
  try {
    return await redis.hget(pullKey(queuePrefix, "position"), "offset");
  } finally {
    redis.disconnect();
  }
}

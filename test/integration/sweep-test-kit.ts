import { expect } from "vitest";
import type { Emulator } from "../../src/emulator/start-emulator.js";
import type { ServiceProcess } from "../helpers/start-service-process.js";
import type { SinkRequest } from "../helpers/sink-server.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { control, createStream, emit, type ControlDelivery } from "./emulator-test-kit.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { adminHeaders } from "../helpers/credentials.js";
import { until as untilAnswer } from "../helpers/until.js";

/** Helpers shared by the sweep's tests (not a test file itself). */

export const adminToken = "sweep-admin-token";

interface SweepStatus {
  streams: { streamId: string; checkpoint: string | null; lastRunAt: string | null; lastError: string | null; found: number; recovered: number; unrecovered: number }[];
}

export async function sweepStatus(service: Pick<ServiceProcess, "adminUrl">): Promise<SweepStatus> {
  const answer = await fetch(`${service.adminUrl}/admin/sweep`, { headers: adminHeaders(adminToken) });
  expect(answer.status).toBe(200);
  return (await answer.json()) as SweepStatus;
}

/** Polls until `check` answers true, with a generous deadline (the machine is shared). */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  await untilAnswer(what, check, timeoutMs);
}

export async function failedCount(emulator: Emulator, streamId: string): Promise<number> {
  const { deliveries } = await control<{ deliveries: ControlDelivery[] }>(emulator, `/deliveries?stream_id=${streamId}`);
  return deliveries.filter((delivery) => delivery.status === "failed").length;
}

/** Deliveries per event id, with the origin header of each. */
export function byEventId(requests: SinkRequest[]): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const request of requests) {
    const id = String(request.headers["webhook-id"]);
    seen.set(id, [...(seen.get(id) ?? []), String(request.headers["x-streamkeeper-origin"])]);
  }
  return seen;
}


/**
 * A stream pointing at `publicUrl` while nothing listens there: each of `count` events
 * fails for good (connection refused, 4 attempts). Resolves with the stream and the ids.
 */
export async function failWhileDown(emulator: Emulator, publicUrl: string, count: number): Promise<{ streamId: string; lost: string[] }> {
  const auth = { method: "basic" as const, username: testCredentials.username, password: testCredentials.password };
  const streamId = await createStream(emulator, `${publicUrl}/webhooks`, { auth, types: ["user.created"] });
  const lost: string[] = [];
  for (let n = 0; n < count; n++) lost.push(await emit(emulator, "user.created", { object: { user_id: `auth0|lost-${n}` } }));
  await until(`${count} failed deliveries`, async () => (await failedCount(emulator, streamId)) === count);
  return { streamId, lost };
}

/** The settings of a service process that sweeps the streams pointing at `publicUrl`; `env` adds or overrides any. */
export function sweepingEnv(options: { publicUrl: string; sinkUrl: string; tenant: Record<string, string> }, env: Record<string, string> = {}): Record<string, string> {
  return serviceProcessEnv({
    ...options.tenant,
    DOWNSTREAM_URL: options.sinkUrl,
    ADMIN_TOKEN: adminToken,
    PUBLIC_URL: options.publicUrl,
    RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
    DISPATCH_BACKOFF_BASE_MS: "20",
    LOG_LEVEL: "info",
    ...env,
  });
}

/** One counter's value from a /metrics text (0 when absent). */
export function counterValue(metrics: string, name: string, labels: string): number {
  const line = metrics.split("\n").find((text) => text.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

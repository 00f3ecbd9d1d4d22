import { expect } from "vitest";
import type { Emulator } from "../../src/emulator/start-emulator.js";
import type { ServiceProcess } from "../chaos/start-service-process.js";
import type { SinkRequest } from "../helpers/sink-server.js";
import { control, type ControlDelivery } from "./emulator-test-kit.js";

/** Helpers shared by the sweep's tests (not a test file itself). */

export const adminToken = "sweep-admin-token";

interface SweepStatus {
  streams: { streamId: string; checkpoint: string | null; lastRunAt: string | null; lastError: string | null; found: number; recovered: number; unrecovered: number }[];
}

export async function sweepStatus(service: Pick<ServiceProcess, "adminUrl">): Promise<SweepStatus> {
  const answer = await fetch(`${service.adminUrl}/admin/sweep`, { headers: { authorization: `Bearer ${adminToken}` } });
  expect(answer.status).toBe(200);
  return (await answer.json()) as SweepStatus;
}

/** Polls until `check` answers true, with a generous deadline (the machine is shared). */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
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


import { queueJobs, queueOldestWaitingAge, routeCircuitOpen } from "../metrics/registry.js";
import { deliveryQueueName } from "../queue/queue-names.js";
import { waitingOf, type QueueFigures } from "./overview.js";

/**
 * Queue figures and circuits for the operator view, from the gauges a scrape fills
 * (metrics/register-queue-gauges.ts, metrics/register-redis-gauges.ts): reading them runs one shared
 * scrape-time read of Redis, pipelined whatever the number of queues, and concurrent
 * readers (a scrape, several open pages) share it. Throws when Redis gave nothing.
 */
export async function readQueueFigures(): Promise<Map<string, QueueFigures>> {
  const [jobs, oldest] = await Promise.all([queueJobs.get(), queueOldestWaitingAge.get()]);
  const figures = new Map<string, QueueFigures>();
  for (const { labels, value } of jobs.values) {
    const queue = String(labels.queue);
    let entry = figures.get(queue);
    if (!entry) figures.set(queue, (entry = { waiting: 0, prioritized: 0, delayed: 0, active: 0, failed: 0, oldestWaitingSeconds: 0 }));
    const state = String(labels.state);
    if (state === "waiting" || state === "prioritized" || state === "delayed" || state === "active" || state === "failed") entry[state] = value;
  }
  for (const { labels, value } of oldest.values) {
    const entry = figures.get(String(labels.queue));
    if (entry) entry.oldestWaitingSeconds = Math.round(value * 10) / 10;
  }
  if (figures.size === 0) throw new Error("no queue figures: Redis did not answer");
  return figures;
}

/** Route name → events waiting for it (queued, prioritized, retrying; not in flight), from the same gauges. */
export async function waitingPerRoute(routes: string[]): Promise<Map<string, number>> {
  const figures = await readQueueFigures();
  return new Map(
    routes.flatMap((route) => {
      const queue = figures.get(deliveryQueueName(route));
      return queue ? [[route, waitingOf(queue)] as const] : [];
    }),
  );
}

/** Route name → whether its circuit is open (route_circuit_open). Throws when Redis gave nothing. */
export async function readCircuits(): Promise<Map<string, boolean>> {
  const { values } = await routeCircuitOpen.get();
  if (values.length === 0) throw new Error("no circuit states: Redis did not answer");
  return new Map(values.map(({ labels, value }) => [String(labels.route), value === 1]));
}

import type { Cluster, Redis } from "ioredis";
import { loadLua } from "../redis/load-lua.js";
import type { Logger } from "../logging/logger.js";

export interface CircuitSettings {
  /** DISPATCH_CIRCUIT_FAILURES: consecutive failed deliveries that open the circuit; 0 off. */
  failures: number;
  /** DISPATCH_CIRCUIT_PROBE_MIN_MS: the first wait before a probe; doubles after each failed probe. */
  probeMinMs: number;
  /** DISPATCH_CIRCUIT_PROBE_MAX_MS: the longest wait between two probes. */
  probeMaxMs: number;
}

/**
 * What a job may do: send as usual, send as the one probe of an open circuit, or go back
 * to the queue without spending an attempt (`hold`: throw BullMQ's RateLimitError).
 */
export type Admission = "send" | "probe" | "hold";

export interface RouteCircuit {
  /**
   * Before a delivery. While the circuit is open, every job but the one probe is `hold`,
   * and the route's queue is held in Redis, so every worker process stops fetching.
   */
  admit(): Promise<Admission>;
  /**
   * After a retryable failure: true when the circuit is (or just became) open, and the
   * job is to go back to the queue the same way, so a route that is down spends no attempts.
   */
  failed(admission: Admission, reason: string): Promise<boolean>;
  /** After the downstream answered (2xx, or a 4xx that is no outage): closes the circuit. */
  answered(): void;
}

/**
 * State per route in one Redis hash (`failures`, and while open `openedAt`, `probeMs`,
 * `nextProbeAt`), shared by every worker process; times from Redis's clock, so processes
 * on different hosts agree. Scripts are atomic, so exactly one job claims each probe.
 */
const admitScript = loadLua(new URL("./circuit-admit.lua", import.meta.url));
const failedScript = loadLua(new URL("./circuit-failed.lua", import.meta.url));
const answeredScript = loadLua(new URL("./circuit-answered.lua", import.meta.url));

// Defined commands (EVALSHA): the scripts' text goes to Redis once per connection, not
// with every delivery. ioredis copies a connection's defined commands onto each pipeline it
// builds (event-ledger.ts); on the dispatcher's connection these three add little to BullMQ's dozens.
type CircuitCommands = {
  streamkeeperCircuitAdmit(key: string): Promise<[number, number]>;
  streamkeeperCircuitFailed(key: string, failures: number, probeMinMs: number, probeMaxMs: number, probe: "1" | "0"): Promise<[number, number, number]>;
  streamkeeperCircuitAnswered(key: string): Promise<number>;
};

export interface RouteCircuitDeps {
  route: string;
  /** circuitKey(queuePrefix, route) */
  key: string;
  /** A connection that waits out a slow Redis (the dispatcher's). */
  redis: Redis | Cluster;
  settings: CircuitSettings;
  /** Stops every worker process taking jobs from the route's queue for `ms` (BullMQ's queue rate limit). */
  hold(ms: number): Promise<void>;
  logger: Logger;
}

/**
 * The per-route circuit breaker (after Convoy's): after `failures` consecutive
 * failed deliveries the route stops sending; one delivery probes after `probeMinMs`,
 * doubling to `probeMaxMs` while it fails; a success closes it and the queue drains by
 * itself. Jobs wait in the route's queue meanwhile, spending no attempts. Other routes
 * have their own queue, worker and circuit, so they never notice.
 *
 * A closed circuit with no failure is remembered for a short while, so a healthy route
 * pays no extra round trip per delivery; a stale "closed" can let through at most a
 * worker's concurrency of requests right after another process opened the circuit.
 */
export function createRouteCircuit({ route, key, redis, settings, hold, logger }: RouteCircuitDeps): RouteCircuit {
  redis.defineCommand("streamkeeperCircuitAdmit", { numberOfKeys: 1, lua: admitScript });
  redis.defineCommand("streamkeeperCircuitFailed", { numberOfKeys: 1, lua: failedScript });
  redis.defineCommand("streamkeeperCircuitAnswered", { numberOfKeys: 1, lua: answeredScript });
  const commands = redis as unknown as CircuitCommands;
  const healthyForMs = Math.min(1000, settings.probeMinMs);
  /** until when this process may skip reading the state (closed, no failure) */
  let healthyUntil = 0;
  /** this process saw a failure or an open circuit since the last close it knows of */
  let troubled = false;

  async function holdBack(waitMs: number): Promise<true> {
    // Held at most probeMinMs at a time: the process that closes the circuit cannot lift
    // another process's hold, so this bounds how long the others lag behind a recovery.
    await hold(Math.max(1, Math.min(waitMs, settings.probeMinMs)));
    return true;
  }

  return {
    async admit() {
      if (settings.failures === 0 || Date.now() < healthyUntil) return "send";
      const [state, value] = await commands.streamkeeperCircuitAdmit(key);
      if (state === 0) {
        troubled = value > 0;
        if (!troubled) healthyUntil = Date.now() + healthyForMs;
        return "send";
      }
      troubled = true;
      if (state === 2) return "probe";
      await holdBack(value);
      return "hold";
    },

    async failed(admission, reason) {
      if (settings.failures === 0) return false;
      troubled = true;
      healthyUntil = 0;
      const [state, waitMs, failures] = await commands.streamkeeperCircuitFailed(
        key, settings.failures, settings.probeMinMs, settings.probeMaxMs, admission === "probe" ? "1" : "0",
      );
      if (state === 0) return false;
      if (state === 2) {
        logger.warn(
          { route, failures, reason, probeInMs: waitMs },
          "route circuit opened: the downstream failed this many deliveries in a row; the route stops sending and probes with one delivery at a growing interval, events wait in its queue without spending attempts",
        );
      } else if (admission === "probe") {
        logger.info({ route, reason, nextProbeInMs: waitMs }, "route circuit probe failed; the route stays stopped");
      }
      return holdBack(waitMs);
    },

    answered() {
      if (settings.failures === 0 || !troubled) return;
      troubled = false;
      commands.streamkeeperCircuitAnswered(key).then(
        (openForMs) => {
          if (Number(openForMs) >= 0) logger.info({ route, openForMs }, "route circuit closed: the downstream answered; the route sends again");
        },
        (error: unknown) => logger.warn({ route, err: error }, "could not record the route's recovery in Redis; its circuit state is read again on the next failure"),
      );
    },
  };
}

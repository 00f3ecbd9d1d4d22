import type { Logger } from "../logging/logger.js";
import type { RedisClient } from "./redis-connection.js";
import { isRedisUnreachable } from "../errors/redis-unreachable.js";

/**
 * One log line each time Redis stops or starts answering this process, read from its
 * main connection: the other connections and parts (workers, queues, the ingress) meet the
 * same outage and leave it to this line, logging only its count or nothing
 * (docs/operating.md, Redis outages). `reachable` is the state the start found (an
 * unreachable Redis at start is already said by the start). Returns a function that stops
 * watching, called before the service closes the connection itself.
 */
export function watchRedisReachability(client: RedisClient, logger: Logger, reachable: boolean): () => void {
  let up = reachable;
  let downSince = reachable ? 0 : Date.now();
  const onError = (error: Error) => {
    if (!up || !isRedisUnreachable(error)) return;
    up = false;
    downSince = Date.now();
    logger.warn({ error: error.message }, "Redis does not answer: webhooks are answered 503 (the tenant retries) and deliveries wait; reconnecting");
  };
  const onReady = () => {
    if (up) return;
    up = true;
    logger.info({ downSeconds: Math.round((Date.now() - downSince) / 1000) }, "Redis answers again: receiving and delivering");
  };
  client.on("error", onError);
  client.on("ready", onReady);
  return () => {
    client.off("error", onError);
    client.off("ready", onReady);
  };
}

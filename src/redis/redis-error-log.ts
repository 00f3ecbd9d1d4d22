import type { Logger } from "../logging/logger.js";
import { createRepeatLog, type RepeatLog } from "../logging/repeat-log.js";
import { isRedisUnreachable } from "../errors/redis-unreachable.js";

/**
 * The error log of a part with Redis connections of its own (workers, queues): an error
 * that only says Redis cannot be reached goes to `debug`, since the process says that once
 * per outage (watch-redis-reachability.ts); any other error is a fault, logged with its
 * stack and then counted per interval (repeat-log.ts).
 */
export function createRedisErrorLog(logger: Logger, message: string, intervalMs: number): RepeatLog {
  const faults = createRepeatLog(logger, "warn", message, intervalMs);
  return (fields = {}, key) => {
    if (isRedisUnreachable(fields.err)) return void logger.debug(fields, message);
    faults(fields, key);
  };
}

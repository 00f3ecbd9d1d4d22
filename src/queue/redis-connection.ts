import { Redis, type RedisOptions } from "ioredis";

/**
 * `worker`: BullMQ workers and queue-events block and must retry forever
 * (`maxRetriesPerRequest: null`, STACK-NOTES). `client`: the HTTP path and the CLI
 * fail fast, so the receiver answers 503 within a second or two when Redis is gone.
 */
export type ConnectionPurpose = "worker" | "client";

export function createRedis(url: string, purpose: ConnectionPurpose, name = "streamkeeper"): Redis {
  const common: RedisOptions = {
    connectionName: name,
    lazyConnect: false,
    ...(purpose === "worker"
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 1000,
          commandTimeout: 1500,
        }),
    retryStrategy: (times) => Math.min(50 * 2 ** times, 1000),
  };
  if (url.startsWith("redis+unix://") || url.startsWith("unix://")) {
    return new Redis({ ...common, path: url.replace(/^(redis\+)?unix:\/\//, "") });
  }
  return new Redis(url, common);
}

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

/** Resolves once the connection is ready; rejects after `timeoutMs` with the last error. */
export async function untilReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === "ready") return;
  await new Promise<void>((ok, fail) => {
    let lastError: Error | undefined;
    const onError = (error: Error) => (lastError = error);
    const timer = setTimeout(() => {
      redis.off("ready", onReady);
      redis.off("error", onError);
      fail(new Error(`Redis is not reachable${lastError ? `: ${lastError.message}` : ""}; check REDIS_URL`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      redis.off("error", onError);
      ok();
    };
    redis.once("ready", onReady);
    redis.on("error", onError);
  });
}

import type { Logger } from "./logger.js";

export interface RepeatLog {
  /**
   * Notes one occurrence. `key` separates kinds that are summed apart (a queue, a
   * refusal's reason); an `err` field is logged whole on a first line only.
   */
  (fields?: Record<string, unknown> & { err?: unknown }, key?: string): void;
}

/**
 * A log line for what repeats while something is wrong (every request during a Redis
 * outage, every request with wrong credentials): the first occurrence is logged at once,
 * with its error and stack; later ones at most once per interval, as one line with their
 * count and the latest error's message. An interval with none ends the episode, so the next
 * occurrence is logged at once again.
 */
export function createRepeatLog(logger: Logger, level: "error" | "warn" | "info", message: string, intervalMs: number): RepeatLog {
  const episodes = new Map<string, { count: number; latest: Record<string, unknown> }>();
  const summarize = (key: string) => {
    const episode = episodes.get(key);
    if (!episode || episode.count === 0) return void episodes.delete(key);
    const { err, ...latest } = episode.latest;
    const error = err instanceof Error ? err.message : err;
    logger[level]({ ...latest, ...(error === undefined ? {} : { error }), occurrences: episode.count, intervalSeconds: intervalMs / 1000 }, `${message} (${episode.count} more in the last ${intervalMs / 1000} s)`);
    episode.count = 0;
    setTimeout(summarize, intervalMs, key).unref();
  };
  return (fields = {}, key = "") => {
    const episode = episodes.get(key);
    if (episode) {
      episode.count += 1;
      episode.latest = fields;
      return;
    }
    logger[level](fields, message);
    episodes.set(key, { count: 0, latest: fields });
    setTimeout(summarize, intervalMs, key).unref();
  };
}

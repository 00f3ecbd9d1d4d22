export interface StreamIdCache {
  /**
   * Every stream id of the tenant, listed at most once per `ttlMs` (concurrent callers share
   * one listing); with `listedSince` (ms), a listing begun before then is made again.
   */
  ids(options?: { listedSince?: number }): Promise<string[]>;
}

/**
 * The stream list for reconciles that name no stream: each such id is looked up in every
 * stream, and 1,000 ids must not list the streams 1,000 times (each page is a tenant call
 * against the same rate limit). A failed listing is not kept, so the next id tries again.
 * An id found in none of the streams asks for a listing begun after its reconcile was
 * queued: a stream created a moment before is searched too, and 1,000 ids queued at once
 * share that one listing.
 */
export function createStreamIdCache(list: () => AsyncIterable<{ id: string }>, ttlMs = 60_000): StreamIdCache {
  let cached: { ids: Promise<string[]>; at: number } | undefined;
  return {
    ids({ listedSince } = {}) {
      const now = Date.now();
      if (!cached || now - cached.at > ttlMs || (listedSince !== undefined && cached.at < listedSince)) {
        const ids = collect(list());
        const entry = { ids, at: now };
        cached = entry;
        ids.catch(() => {
          if (cached === entry) cached = undefined;
        });
      }
      return cached.ids;
    },
  };
}

async function collect(streams: AsyncIterable<{ id: string }>): Promise<string[]> {
  const ids: string[] = [];
  for await (const stream of streams) ids.push(stream.id);
  return ids;
}

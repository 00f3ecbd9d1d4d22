import { ApiError } from "./api-error.js";
import { pathId } from "./path-id.js";
import type { StoredStream, StreamStore } from "./stream-store.js";

/** The stream named by a path id: 400 for a malformed id, 404 in the real words for an unknown one. */
export function findStream(streams: StreamStore, rawId: string | string[] | undefined): StoredStream {
  const stream = streams.get(pathId("id", rawId));
  if (!stream) throw new ApiError(404, "The requested stream does not exist.");
  return stream;
}

import { newId } from "./new-id.js";
import type { Destination, StreamCreate, StreamPatch } from "./stream-schemas.js";

type ShownAuthorization = { method: "basic"; username: string } | { method: "bearer" } | { method: "custom_header"; header_key: string };

/** A stream as the API answers it. */
export interface EventStream {
  id: string;
  name: string;
  subscriptions: { event_type: string }[];
  destination: { type: "webhook"; configuration: { webhook_endpoint: string; webhook_authorization: ShownAuthorization } };
  status: "enabled" | "disabled";
  created_at: string;
  updated_at: string;
}

/** A stream as the emulator keeps it: secrets included, plus its failed-delivery counts. */
export interface StoredStream extends Omit<EventStream, "destination"> {
  destination: Destination;
  failures: { consecutive: number; total: number };
}

export interface StreamStore {
  create(input: StreamCreate): StoredStream;
  get(id: string): StoredStream | undefined;
  /** Every stream in creation order: the stable order of the list operation. */
  all(): StoredStream[];
  update(id: string, patch: StreamPatch): StoredStream | undefined;
}

export function createStreamStore(): StreamStore {
  const streams = new Map<string, StoredStream>();
  return {
    create(input) {
      const now = new Date().toISOString();
      const stream: StoredStream = { id: newId("est_"), ...structuredClone(input), created_at: now, updated_at: now, failures: { consecutive: 0, total: 0 } };
      streams.set(stream.id, stream);
      return stream;
    },
    get: (id) => streams.get(id),
    all: () => [...streams.values()],
    update(id, patch) {
      const stream = streams.get(id);
      if (!stream) return undefined;
      // Re-enabling starts the auto-disable counts afresh, or the stream would be disabled again by the next failure.
      if (stream.status === "disabled" && patch.status === "enabled") stream.failures = { consecutive: 0, total: 0 };
      Object.assign(stream, structuredClone(patch));
      stream.updated_at = laterThan(stream.updated_at);
      return stream;
    },
  };
}

/** The stream as the API answers it: write-only secrets left out (docs/tenant.md#updating-a-stream). */
export function publicStream(stream: StoredStream): EventStream {
  const { webhook_endpoint, webhook_authorization: auth } = stream.destination.configuration;
  const shownAuth: ShownAuthorization =
    auth.method === "basic"
      ? { method: auth.method, username: auth.username }
      : auth.method === "custom_header"
        ? { method: auth.method, header_key: auth.header_key }
        : { method: auth.method };
  return {
    id: stream.id,
    name: stream.name,
    subscriptions: stream.subscriptions,
    destination: { type: "webhook", configuration: { webhook_endpoint, webhook_authorization: shownAuth } },
    status: stream.status,
    created_at: stream.created_at,
    updated_at: stream.updated_at,
  };
}

/** Now, but always after `previous`, so an update within the same millisecond still moves `updated_at`. */
function laterThan(previous: string): string {
  return new Date(Math.max(Date.now(), Date.parse(previous) + 1)).toISOString();
}

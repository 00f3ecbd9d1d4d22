import type { SweepScope } from "../streams/swept-streams.js";
import { sweepVerdict } from "../streams/swept-streams.js";
import type { TenantClient } from "../tenant/create-tenant-client.js";

/**
 * The ids of the streams this service sweeps now: with PUBLIC_URL, every stream of the
 * tenant (named in RECONCILE_SWEEP_STREAMS, when set) that points at it, read afresh each
 * time (a `streams connect` takes effect at the next sweep); with the ids alone, those ids.
 */
export async function listSweptStreams(tenant: Pick<TenantClient, "eventStreams">, scope: SweepScope): Promise<string[]> {
  if (scope.publicUrl === undefined) return scope.streamIds ?? [];
  const ids: string[] = [];
  for await (const stream of tenant.eventStreams({ take: 100 })) if (sweepVerdict(stream, scope).swept) ids.push(stream.id);
  return ids;
}

import type { Env } from "../config/config.js";
import { plainProblem } from "../errors/http-answer.js";
import type { PacedTenant } from "../pace/create-paced-tenant.js";
import type { Reconciler } from "../reconcile/create-reconciler.js";
import { sweepScopeOf } from "../streams/swept-streams.js";
import { listSweptStreams } from "./list-swept-streams.js";
import { sweepWindow, type UnlistedSpan, type WindowResult } from "./sweep-window.js";

export interface WindowRequest {
  from: Date;
  to: Date;
  /** Unset: the swept streams. */
  streamIds?: string[];
  /** An event type pattern (`user.*`). */
  type?: string;
  dryRun: boolean;
}

/** The service cannot read a window with its settings: what to set, for a 4xx answer. */
export class WindowUnavailableError extends Error {
  override name = "WindowUnavailableError";
  /** The service's settings, not the request, must change. */
  readonly httpStatus = 409;
  readonly problemType = plainProblem;
}

/** The window asks for something the service must not do (a bad request): what to change. */
export class WindowRefusedError extends Error {
  override name = "WindowRefusedError";
  readonly httpStatus = 400;
  readonly problemType = plainProblem;
}

export type WindowRunner = (request: WindowRequest, onResult: (result: WindowResult) => void) => Promise<{ streams: string[]; pages: number; unlisted: Array<UnlistedSpan & { streamId: string }> }>;

/**
 * One window from the command line (`streamkeeper reconcile --since`), run by the service
 * with its own tenant settings and routes (README.md#commands: a command acts with the running
 * service's configuration). Same list and outcomes as the sweep; no checkpoint is moved.
 */
export function createWindowRunner(deps: {
  env: Pick<Env, "RECONCILE_SWEEP_STREAMS" | "PUBLIC_URL" | "DEDUPE_TTL_SECONDS">;
  tenant: PacedTenant;
  reconciler: Pick<Reconciler, "reconcileRecord" | "assessRecord">;
}): WindowRunner {
  return async (request, onResult) => {
    // An id older than DEDUPE_TTL_SECONDS is forgotten: recovering its event could deliver it a
    // second time. A dry run acts on nothing, so it may look further (the sweep's warning about a
    // span it skipped points there).
    const remembered = Date.now() - deps.env.DEDUPE_TTL_SECONDS * 1000;
    if (!request.dryRun && request.from.getTime() < remembered) {
      throw new WindowRefusedError(
        `since (${request.from.toISOString()}) is further back than DEDUPE_TTL_SECONDS (${deps.env.DEDUPE_TTL_SECONDS} s, so not before ${new Date(remembered).toISOString()}): ids that old are forgotten and an event recovered from then could be delivered twice; give a later --since, or list that span with --dry-run and recover the events the destination lacks by id`,
      );
    }
    const { tenant } = deps;
    if ("unavailable" in tenant) throw new WindowUnavailableError(`the service cannot read the tenant's deliveries: ${tenant.unavailable}`);
    let streams = request.streamIds;
    if (streams === undefined || streams.length === 0) {
      const scope = sweepScopeOf(deps.env);
      if (!scope) throw new WindowUnavailableError("name the streams with --stream <id>, or set the service's PUBLIC_URL or RECONCILE_SWEEP_STREAMS so it knows its swept streams");
      streams = await listSweptStreams(tenant.client, scope);
    }
    let pages = 0;
    const unlisted: Array<UnlistedSpan & { streamId: string }> = [];
    for (const streamId of streams) {
      const figures = await sweepWindow({ tenant: tenant.client, reconciler: deps.reconciler, streamId, from: request.from, to: request.to, type: request.type, dryRun: request.dryRun, onResult });
      pages += figures.pages;
      unlisted.push(...figures.unlisted.map((span) => ({ streamId, ...span })));
    }
    return { streams, pages, unlisted };
  };
}

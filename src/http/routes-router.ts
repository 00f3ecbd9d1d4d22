import express, { type Router } from "express";
import { z } from "zod";
import type { DeliveryQueues } from "../queue/delivery-queues.js";
import type { OrphanedRoutes } from "../queue/orphaned-routes.js";
import type { Route } from "../routes/route.js";
import type { RouteTrier } from "../routes/try-route.js";
import type { CloudEvent } from "../events/cloud-event.js";
import { InvalidEventError } from "../events/invalid-event-error.js";
import { validateCloudEvent } from "../events/validate-cloud-event.js";
import { publishedRoute } from "../service-config/service-config.js";
import { firstIssue, time } from "./archive-router.js";
import { sendProblem } from "./problem.js";

export interface RoutesRouterDeps {
  routes: Route[];
  queues: DeliveryQueues;
  orphans: OrphanedRoutes;
  /** Told after a move or drop, so the orphaned-jobs gauge and the start warning's list follow. */
  forget(route: string): void;
  /** Parks the route's waiting events older than `before` (queue/park-waiting.ts); absent with the archive off (ARCHIVE=off). */
  park?(route: string, before: number): Promise<{ parked: number; firstArrival?: number }>;
  /** What a route would do with an event (routes/try-route.ts), sending nothing. */
  tryRoute: RouteTrier;
  /** An archived event by id (archive/archived-payload.ts); none: the archive is off. */
  archivedEvent?(eventId: string): Promise<CloudEvent | "erased" | undefined>;
}

const tryBody = z.union([z.strictObject({ eventId: z.string().min(1) }), z.strictObject({ event: z.unknown() })]);
const tryUsage = 'send {"eventId":"<id>"} (an archived event) or {"event":{...}} (a CloudEvent as JSON)';

const moveBody = z.strictObject({ to: z.string("must be the name of a configured route").min(1, "must be the name of a configured route") });
const parkBody = z.strictObject({ olderThan: time.optional() });

/**
 * `GET /admin/routes`, `POST /admin/routes/:name/move {"to"}`, `DELETE /admin/routes/:name`
 * (docs/operating.md#removing-or-renaming-a-route), `POST /admin/routes/:name/park {"olderThan"?}`
 * (docs/operating.md, "A stream came back with a day of events"), `POST /admin/routes/:name/try
 * {"eventId"}|{"event"}` (docs/routes.md), behind ADMIN_TOKEN: what `streamkeeper routes` uses.
 * A route renamed or removed keeps its waiting events until they are moved or dropped here.
 */
export function createRoutesRouter(deps: RoutesRouterDeps): Router {
  const router = express.Router();
  const names = deps.routes.map((route) => route.name);
  const configuredNames = () => names.join(", ") || "none";

  router.get("/routes", async (_req, res) => {
    const configured = await Promise.all(
      deps.routes.map(async (route) => {
        const counts = await deps.queues.forRoute(route.name).getJobCounts("wait", "prioritized", "delayed", "active", "failed");
        const { url, match } = publishedRoute(route);
        // lanes: the queued part of `waiting`, live ones first (queue/lane.ts).
        const { filter, testEvents = "deliver", transform } = route;
        return { name: route.name, state: "configured", match, url, filter, testEvents, transform, waiting: counts.wait! + counts.prioritized! + counts.delayed! + counts.active!, lanes: { live: counts.wait!, late: counts.prioritized! }, deadLetters: counts.failed! };
      }),
    );
    const removed = await Promise.all((await deps.orphans.find()).map(async (name) => ({ name, state: "removed", waiting: await deps.orphans.count(name) })));
    res.json({ routes: [...configured, ...removed.filter((route) => route.waiting > 0)] });
  });

  router.post("/routes/:name/try", async (req, res) => {
    const name = req.params.name as string;
    if (!names.includes(name)) return sendProblem(res, 404, `no configured route ${name}: the routes are ${configuredNames()}`);
    const parsed = tryBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendProblem(res, 400, tryUsage);
    let event: unknown;
    if ("event" in parsed.data) event = parsed.data.event;
    else {
      const found = await archived(parsed.data.eventId);
      if ("status" in found) return sendProblem(res, found.status, found.detail);
      event = found.event;
    }
    let checked: CloudEvent;
    try {
      checked = validateCloudEvent(event, "event.");
    } catch (error) {
      if (!(error instanceof InvalidEventError)) throw error;
      return sendProblem(res, 400, error.message);
    }
    res.json(await deps.tryRoute(name, checked));
  });

  /** The archived event, or why there is none, in words. */
  const archived = async (eventId: string): Promise<{ event: CloudEvent } | { status: 404 | 409; detail: string }> => {
    if (!deps.archivedEvent) return { status: 409, detail: 'the archive is off (ARCHIVE=off), so no event can be read by its id: send {"event":{...}} instead' };
    const event = await deps.archivedEvent(eventId);
    if (event === undefined) return { status: 404, detail: `no archived event ${eventId}: check the id (streamkeeper events search --id), or send {"event":{...}}` };
    if (event === "erased") return { status: 409, detail: `the payload of event ${eventId} was erased (events forget): send {"event":{...}} instead` };
    return { event };
  };

  router.post("/routes/:name/move", async (req, res) => {
    const name = req.params.name as string;
    if (names.includes(name)) return sendProblem(res, 409, `route ${name} is configured: only the events of a removed route can be moved`);
    const parsed = moveBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendProblem(res, 400, `send {"to":"<route>"}, a configured route (${configuredNames()})`);
    const { to } = parsed.data;
    if (!names.includes(to)) return sendProblem(res, 404, `no configured route ${to}: the routes are ${configuredNames()}`);
    if (!(await deps.orphans.find()).includes(name)) return sendProblem(res, 404, `no removed route ${name} has events waiting: streamkeeper routes list (GET /admin/routes) shows the removed routes that do`);
    const moved = await deps.orphans.move(name, deps.queues.forRoute(to));
    deps.forget(name);
    res.json({ moved, from: name, to });
  });

  router.delete("/routes/:name", async (req, res) => {
    const name = req.params.name as string;
    if (names.includes(name)) return sendProblem(res, 409, `route ${name} is configured: remove it from ROUTES_FILE (or DOWNSTREAM_URL) and restart first; its events then wait, and can be dropped`);
    if (!(await deps.orphans.find()).includes(name)) return sendProblem(res, 404, `no removed route ${name} has events waiting: streamkeeper routes list (GET /admin/routes) shows the removed routes that do`);
    const dropped = await deps.orphans.drop(name);
    deps.forget(name);
    res.json({ dropped, route: name });
  });

  router.post("/routes/:name/park", async (req, res) => {
    const name = req.params.name as string;
    if (!names.includes(name)) return sendProblem(res, 404, `no configured route ${name}: the routes are ${configuredNames()}`);
    if (!deps.park) return sendProblem(res, 409, "the archive is off (ARCHIVE=off): parked events would be kept nowhere; turn the archive on to park, or let the late lane drain");
    const parsed = parkBody.safeParse(req.body ?? {});
    if (!parsed.success) return sendProblem(res, 400, `${firstIssue(parsed.error)}; send {"olderThan":"<ISO 8601 time>"}, or {} for the route's live window`);
    const before = parsed.data.olderThan === undefined ? Date.now() - deps.queues.liveWindowMs(name) : Date.parse(parsed.data.olderThan);
    const { parked, firstArrival } = await deps.park(name, before);
    // `since`: the earliest arrival among them, where a replay of them starts.
    res.json({ parked, route: name, olderThan: new Date(before).toISOString(), ...(firstArrival === undefined ? {} : { since: new Date(firstArrival).toISOString() }) });
  });

  return router;
}

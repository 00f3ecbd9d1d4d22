import { compileFilter } from "./route-filter.js";
import { routeMatches, type Route } from "./route.js";

/**
 * What a route does with one event, step by step: each step `true` when it lets the event
 * through, `null` for a filter the route does not have. `deliver` is all of them.
 */
export interface RouteChoice {
  /** The event's type matches the route's `match`. */
  match: boolean;
  /** The route's `filter` selects the event; null: the route has no filter. */
  filter: boolean | null;
  /** Not a test event (`a0purpose: "test"`), or the route delivers them (`testEvents: deliver`). */
  testEvents: boolean;
  deliver: boolean;
}

/** The routes of a matched type that an event goes to, and those that filter it out (`filtered`). */
export interface Narrowed {
  routes: string[];
  filtered: string[];
}

export interface RouteChooser {
  /** What the route named does with the event; undefined for a name that is no route. */
  choose(name: string, event: { type: string }): RouteChoice | undefined;
  /**
   * The routes among `matched` (by type) that the event goes to. Undefined when no route
   * has a filter or drops test events: then every matched route takes every event, and
   * the event store skips the step.
   */
  narrow?(event: { type: string }, matched: string[]): Narrowed;
}

/** The tenant marks the events its dashboard's "test" button sends (docs/tenant.md#webhook-delivery). */
export function isTestEvent(event: object): boolean {
  return (event as { a0purpose?: unknown }).a0purpose === "test";
}

/** Each route's filter compiled once (route-filter.ts; load-routes.ts checked it at start). */
export function createRouteChooser(routes: Route[]): RouteChooser {
  const steps = new Map(routes.map((route) => [route.name, { route, filter: route.filter && compileFilter(route.filter), dropTests: route.testEvents === "drop" }]));
  const selects = (name: string, event: object) => {
    const step = steps.get(name);
    if (!step) return true;
    if (step.dropTests && isTestEvent(event)) return false;
    return step.filter ? step.filter(event) : true;
  };
  const chooser: RouteChooser = {
    choose(name, event) {
      const step = steps.get(name);
      if (!step) return undefined;
      const match = routeMatches(step.route, event.type);
      const filter = step.filter ? step.filter(event) : null;
      const testEvents = !(step.dropTests && isTestEvent(event));
      return { match, filter, testEvents, deliver: match && filter !== false && testEvents };
    },
  };
  if (routes.some((route) => route.filter || route.testEvents === "drop")) {
    chooser.narrow = (event, matched) => {
      const narrowed: Narrowed = { routes: [], filtered: [] };
      for (const name of matched) (selects(name, event) ? narrowed.routes : narrowed.filtered).push(name);
      return narrowed;
    };
  }
  return chooser;
}

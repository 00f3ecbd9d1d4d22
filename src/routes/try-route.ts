import { createRouteChooser, type RouteChoice } from "./route-chooser.js";
import { compileTransform, TransformError } from "./route-transform.js";
import type { Route } from "./route.js";

/** What a route would do with one event (`routes try`): each step, and the body it would send. */
export interface TryAnswer extends RouteChoice {
  /** The JSON it would send (the transform's result, else the CloudEvent); null when it would send nothing. */
  body: unknown;
  /** Why it would be a dead letter instead (the transform failed or ran past its time). */
  error?: string;
}

/**
 * `routes try`: a route's steps run on one event as delivery would run them (the filters
 * at fan-out, the transform at dispatch, with TRANSFORM_TIMEOUT_MS), sending nothing.
 * Resolves undefined for a name that is no route.
 */
export function createRouteTrier(routes: Route[], transformTimeoutMs: number) {
  const chooser = createRouteChooser(routes);
  const transforms = new Map(routes.flatMap((route) => (route.transform ? [[route.name, compileTransform(route.transform, transformTimeoutMs)] as const] : [])));
  return async (name: string, event: { type: string }): Promise<TryAnswer | undefined> => {
    const choice = chooser.choose(name, event);
    if (!choice) return undefined;
    const transform = transforms.get(name);
    if (!choice.deliver || !transform) return { ...choice, body: choice.deliver ? event : null };
    try {
      return { ...choice, body: JSON.parse(await transform(event)) as unknown };
    } catch (error) {
      if (!(error instanceof TransformError)) throw error;
      return { ...choice, deliver: false, body: null, error: `the route's transform ${error.message}: the delivery would be a dead letter` };
    }
  };
}

export type RouteTrier = ReturnType<typeof createRouteTrier>;

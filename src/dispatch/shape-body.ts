import { wholeEvent, type DeliveryJobData } from "../queue/delivery-job.js";
import { compileTransform } from "../routes/route-transform.js";
import type { Route } from "../routes/route.js";

/** What a delivery sends: its body and that body's content type. */
export interface ShapedBody {
  body: string;
  contentType: string;
}

/**
 * A route's body for one job: the CloudEvent itself (structured mode), or where the route
 * has a `transform`, that expression's result as JSON (docs/routes.md).
 * A transform that fails or runs past `transformTimeoutMs` rejects with a TransformError
 * (route-transform.ts), which the processor makes a dead letter.
 */
export function createBodyShaper(route: Pick<Route, "transform">, transformTimeoutMs: number): (data: DeliveryJobData) => Promise<ShapedBody> | ShapedBody {
  if (!route.transform) return (data) => ({ body: data.eventJson ?? JSON.stringify(data.event), contentType: "application/cloudevents+json" });
  const transform = compileTransform(route.transform, transformTimeoutMs);
  const contentType = "application/json";
  return (data) => {
    // At once where the transform is an object of paths (route-transform.ts): no Promise per event.
    const body = transform(wholeEvent(data));
    return typeof body === "string" ? { body, contentType } : body.then((text) => ({ body: text, contentType }));
  };
}

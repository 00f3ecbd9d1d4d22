import { z } from "zod";

/**
 * An event stream as the tenant returns it (docs/tenant.md#event-streams). Strict on
 * what both the document and real answers agree on (id, name, status enabled|disabled,
 * subscriptions of `{event_type}`); loose objects everywhere, so a field the tenant adds
 * later is kept, not rejected. Other destination types than webhook exist on the real
 * tenant, so `configuration` is only typed for the webhook fields.
 */
export const eventStreamSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  subscriptions: z.array(z.looseObject({ event_type: z.string() })),
  destination: z.looseObject({
    type: z.string(),
    configuration: z
      .looseObject({
        webhook_endpoint: z.string().optional(),
        webhook_authorization: z.looseObject({ method: z.string(), username: z.string().optional() }).optional(),
      })
      .optional(),
  }),
  status: z.enum(["enabled", "disabled"]),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
});

export type EventStream = z.infer<typeof eventStreamSchema>;

/**
 * One page of `GET /event-streams`: `{eventStreams, next}`; `next` is an opaque cursor,
 * absent on the last page (docs/tenant.md#event-streams). A bare array (no paging) is read as one last page.
 */
export const eventStreamPageSchema = z.preprocess(
  (body) => (Array.isArray(body) ? { eventStreams: body } : body),
  z.looseObject({ eventStreams: z.array(eventStreamSchema), next: z.string().nullish() }),
);

export interface EventStreamPage {
  eventStreams: EventStream[];
  /** Pass as `from` to get the next page; undefined on the last page. */
  next?: string;
}

import { Router } from "express";
import { z } from "zod";
import { requireScope } from "./api-guard.js";
import { paginate } from "./paginate.js";
import { findStream } from "./find-stream.js";
import { streamCreateBody, streamPatchBody } from "./stream-schemas.js";
import { publicStream, type StreamStore } from "./stream-store.js";
import { validationError } from "./validation-error.js";

const listQuery = z.object({
  from: z.string().min(1).optional(),
  take: z.coerce.number().int().min(1).max(100).default(50),
});

/** The stream operations: list and update (docs/tenant.md#event-streams, docs/tenant.md#updating-a-stream), create and get one (real). */
export function streamRoutes(streams: StreamStore): Router {
  const router = Router();

  router.get("/event-streams", requireScope("read:event_streams"), (req, res) => {
    const query = listQuery.safeParse(req.query);
    if (!query.success) throw validationError("Query", query.error);
    const page = paginate(streams.all(), query.data.from, query.data.take);
    res.json({ eventStreams: page.items.map(publicStream), ...(page.next ? { next: page.next } : {}) });
  });

  router.post("/event-streams", requireScope("create:event_streams"), (req, res) => {
    const body = streamCreateBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    res.status(201).json(publicStream(streams.create(body.data)));
  });

  router.get("/event-streams/:id", requireScope("read:event_streams"), (req, res) => {
    res.json(publicStream(findStream(streams, req.params.id)));
  });

  router.patch("/event-streams/:id", requireScope("update:event_streams"), (req, res) => {
    const id = findStream(streams, req.params.id).id;
    const body = streamPatchBody.safeParse(req.body);
    if (!body.success) throw validationError("Payload", body.error);
    res.json(publicStream(streams.update(id, body.data)!));
  });

  return router;
}

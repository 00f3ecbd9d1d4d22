import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { sendProblem } from "./problem.js";

/**
 * Search, replay and erasure refused (503) while this process's archive database is not the
 * one its Redis's events are archived to (outbox-database-claim.ts): they would see a part
 * of the archive, and an erasure would leave the payloads where they are.
 */
export function createSplitArchiveGuard(refusedBy: () => string | undefined): Router {
  const router = express.Router();
  const refuse = (_req: Request, res: Response, next: NextFunction) => {
    const holder = refusedBy();
    if (holder === undefined) return next();
    sendProblem(
      res,
      503,
      `this process's archive database is not the one the events of its Redis are archived to (${holder}): search, replay and erasure here would see a part of the archive. Ask a process using that database, or give this one the same ARCHIVE_DATABASE_URL (docs/deploy.md, The archive: one database)`,
      { "Retry-After": "10" },
    );
  };
  router.get("/events", refuse);
  router.delete("/entities/:id", refuse);
  // Starting one: a replay's own state (GET, DELETE /replays/:id) stays readable and cancellable.
  router.post("/replays", refuse);
  return router;
}

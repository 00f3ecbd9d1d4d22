import { Router } from "express";
import { requireScope } from "./api-guard.js";
import type { ProfileStore } from "./profile-store.js";

/** Delete a token exchange profile (docs/tenant.md#token-exchange-profiles): 204 with no body, also for an id already gone. */
export function profileRoutes(profiles: ProfileStore): Router {
  const router = Router();
  router.delete("/token-exchange-profiles/:id", requireScope("delete:token_exchange_profiles"), (req, res) => {
    profiles.delete(String(req.params.id));
    res.status(204).end();
  });
  return router;
}

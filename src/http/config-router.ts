import express, { type Router } from "express";
import type { ServiceConfig } from "../service-config/service-config.js";

/** `GET /admin/config`: this process's effective non-secret configuration (service-config.ts), behind ADMIN_TOKEN. */
export function createConfigRouter(config: ServiceConfig): Router {
  const router = express.Router();
  router.get("/config", (_req, res) => {
    res.json(config);
  });
  return router;
}

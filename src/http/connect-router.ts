import express, { type Router } from "express";
import { z } from "zod";
import { ConnectStreamError } from "../streams/connect-stream.js";
import type { StreamConnector } from "../streams/create-stream-connector.js";
import { TenantApiError, TenantValidationError } from "../tenant/tenant-api-error.js";
import { sendProblem } from "./problem.js";

const requestBody = z.strictObject({ publicUrl: z.string("must be a URL such as https://hooks.example.com").optional() });

/** Statuses of a refused connect: the request's fault 400, the service's settings 409. */
const statusOf: Record<ConnectStreamError["reason"], number> = { bad_public_url: 400, no_public_url: 400, no_auth: 409, no_tenant: 409, no_receiver: 409 };

/**
 * `POST /admin/streams/:streamId/connect {"publicUrl"?}` (README.md#http-surfaces),
 * mounted behind ADMIN_TOKEN: 200 with the stream as the tenant returned it.
 */
export function createConnectRouter(connector: StreamConnector): Router {
  const router = express.Router();
  router.post("/streams/:streamId/connect", async (req, res) => {
    const parsed = requestBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return sendProblem(res, 400, issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}; the only field is publicUrl` : `publicUrl ${issue.message}`);
    }
    try {
      res.json(await connector.connect(req.params.streamId as string, parsed.data.publicUrl));
    } catch (error) {
      if (error instanceof ConnectStreamError) return sendProblem(res, statusOf[error.reason], error.message);
      if (error instanceof TenantValidationError) return sendProblem(res, 400, error.message);
      // The tenant's answer, relayed: a missing stream stays a 404, anything else is the tenant failing us.
      if (error instanceof TenantApiError) return sendProblem(res, error.status === 404 ? 404 : 502, error.message);
      throw error;
    }
  });
  return router;
}

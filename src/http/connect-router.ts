import express, { type Router } from "express";
import { z } from "zod";
import type { StreamConnector } from "../streams/create-stream-connector.js";
import { sendProblem } from "./problem.js";

const requestBody = z.strictObject({ publicUrl: z.string("must be a URL such as https://hooks.example.com").optional() });

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
      return sendProblem(res, 400, issue.code === "unrecognized_keys" ? `unknown field ${issue.keys.join(", ")}; the only field is publicUrl` : `${issue.path.length > 0 ? "publicUrl" : "body:"} ${issue.message}`);
    }
    // A refused connect (ConnectStreamError) or the tenant's answer carries its status to the admin app's error handler.
    res.json(await connector.connect(req.params.streamId as string, parsed.data.publicUrl));
  });
  return router;
}

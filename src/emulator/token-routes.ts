import express, { Router, type Response } from "express";
import type { ClientRegistry } from "./client-registry.js";
import { tokenLifetimeSeconds, type TokenIssuer } from "./token-issuer.js";

/** An OAuth error in Auth0's shape `{"error","error_description"}` (docs/tenant.md#tokens). */
function oauthError(res: Response, status: number, error: string, description: string): void {
  res.status(status).json({ error, error_description: description });
}

/**
 * `POST /oauth/token` (client credentials, form-encoded or JSON; the client may also
 * authenticate with HTTP Basic) and `GET /.well-known/jwks.json`.
 */
export function tokenRoutes(deps: { tokens: TokenIssuer; clients: ClientRegistry; audience: string }): Router {
  const router = Router();
  router.use("/oauth/token", express.urlencoded({ extended: false }), express.json());

  router.post("/oauth/token", async (req, res) => {
    const body = (typeof req.body === "object" && req.body !== null ? req.body : {}) as Record<string, unknown>;
    const field = (name: string) => (typeof body[name] === "string" ? (body[name] as string) : undefined);
    const [basicId, basicSecret] = basicCredentials(req.get("authorization"));
    const grantType = field("grant_type");
    const clientId = field("client_id") ?? basicId;
    const clientSecret = field("client_secret") ?? basicSecret;
    const audience = field("audience");

    if (!grantType) return oauthError(res, 400, "invalid_request", "Missing required parameter: grant_type");
    if (grantType !== "client_credentials") return oauthError(res, 400, "unsupported_grant_type", `Unsupported grant type: ${grantType}`);
    if (!clientId) return oauthError(res, 400, "invalid_request", "Missing required parameter: client_id");
    if (!clientSecret) return oauthError(res, 400, "invalid_request", "Missing required parameter: client_secret");
    const client = deps.clients.authenticate(clientId, clientSecret);
    if (!client) return oauthError(res, 401, "access_denied", "Unauthorized");
    if (!audience) return oauthError(res, 403, "access_denied", "No audience parameter was provided, and no default audience has been configured");
    if (audience !== deps.audience) return oauthError(res, 403, "access_denied", `Service not enabled within domain: ${audience}`);

    // A `scope` parameter narrows the grant to the requested scopes the client holds.
    const requested = field("scope")?.split(" ").filter(Boolean);
    const scopes = requested ? client.scopes.filter((scope) => requested.includes(scope)) : client.scopes;
    const accessToken = await deps.tokens.issue(client.clientId, scopes);
    res.set("Cache-Control", "no-store").json({ access_token: accessToken, token_type: "Bearer", expires_in: tokenLifetimeSeconds, scope: scopes.join(" ") });
  });

  router.get("/.well-known/jwks.json", (_req, res) => {
    res.json(deps.tokens.jwks());
  });
  return router;
}

function basicCredentials(header: string | undefined): [string?, string?] {
  const encoded = /^Basic\s+(\S+)$/i.exec(header ?? "")?.[1];
  if (!encoded) return [];
  const text = Buffer.from(encoded, "base64").toString();
  const colon = text.indexOf(":");
  return colon < 0 ? [] : [text.slice(0, colon), text.slice(colon + 1)];
}

import { plainProblem } from "../errors/http-answer.js";
import type { TenantClient } from "../tenant/create-tenant-client.js";
import type { EventStream } from "../tenant/event-stream.js";
import { isTenantEndpoint } from "../tenant/is-tenant-endpoint.js";
import type { WebhookAuthorization } from "../tenant/stream-patch.js";
import type { ResolvedWebhookAuth } from "../credentials/webhook-credentials.js";

/** Why a stream cannot be connected: the message says what to change, `reason` lets the caller pick a status or exit code. */
export class ConnectStreamError extends Error {
  readonly problemType = plainProblem;
  constructor(
    message: string,
    readonly reason: "bad_public_url" | "no_public_url" | "no_auth" | "no_tenant" | "no_receiver",
  ) {
    super(message);
    this.name = "ConnectStreamError";
  }

  /** The request's fault 400, the service's settings 409. */
  get httpStatus(): number {
    return this.reason === "bad_public_url" || this.reason === "no_public_url" ? 400 : 409;
  }
}

/**
 * `<public-url>/webhooks/<stream-id>`; a path prefix (behind a proxy) is kept. The tenant
 * sends only to https, or http on a loopback address (docs/tenant.md#updating-a-stream), so anything else is refused here.
 */
export function webhookUrl(publicUrl: string, streamId: string, field = "publicUrl"): string {
  const url = URL.canParse(publicUrl) ? new URL(publicUrl) : undefined;
  if (!url || !isTenantEndpoint(url)) {
    throw new ConnectStreamError(`${field} must be an https:// URL (http:// only on loopback), got ${JSON.stringify(publicUrl)}`, "bad_public_url");
  }
  if (url.search || url.hash) throw new ConnectStreamError(`${field} must not have a query or fragment`, "bad_public_url");
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}/webhooks/${encodeURIComponent(streamId)}`;
}

/** The stream's destination in the tenant's words; the secrets are write-only there (never returned). */
function authorizationOf(auth: ResolvedWebhookAuth): WebhookAuthorization {
  switch (auth.method) {
    case "basic":
      return { method: "basic", username: auth.username, password: auth.password };
    case "bearer":
      return { method: "bearer", token: auth.token };
    case "custom_header":
      return { method: "custom_header", header_key: auth.headerName, header_value: auth.headerValue };
    case "none":
      throw new ConnectStreamError("WEBHOOK_AUTH=none, but the tenant requires authorization; set WEBHOOK_AUTH=basic (or bearer, custom_header) and its credentials", "no_auth");
  }
}

/** Points the stream at `endpoint` with `auth`: one PATCH of its destination; answers the stream as the tenant returned it. */
export async function connectStream(client: Pick<TenantClient, "updateEventStream">, streamId: string, endpoint: string, auth: ResolvedWebhookAuth): Promise<EventStream> {
  const authorization = authorizationOf(auth);
  return client.updateEventStream(streamId, {
    destination: { type: "webhook", configuration: { webhook_endpoint: endpoint, webhook_authorization: authorization } },
  });
}

/** "stream est_.. now delivers to <endpoint> with basic authorization (user hooks)", from the stream the tenant returned. */
export function describeConnection(stream: EventStream): string {
  const configuration = stream.destination.configuration;
  const authorization = configuration?.webhook_authorization;
  const method = authorization?.method ?? "no";
  const who = method === "basic" && authorization?.username ? ` (user ${authorization.username})` : method === "custom_header" && typeof authorization?.header_key === "string" ? ` (header ${authorization.header_key})` : "";
  return `stream ${stream.id} now delivers to ${configuration?.webhook_endpoint ?? "(no endpoint)"} with ${method} authorization${who}`;
}

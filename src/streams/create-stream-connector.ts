import { type Config, tenantSettings } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import type { TenantClient } from "../tenant/create-tenant-client.js";
import type { EventStream } from "../tenant/event-stream.js";
import type { ResolvedWebhookAuth } from "../credentials/webhook-credentials.js";
import { ConnectStreamError, connectStream, webhookUrl } from "./connect-stream.js";

export interface StreamConnector {
  /** Points the stream at `<publicUrl, else PUBLIC_URL>/webhooks/<streamId>` with this service's credentials. */
  connect(streamId: string, publicUrl?: string): Promise<EventStream>;
}

export interface StreamConnectorOptions {
  config: Config;
  /** The credentials the receivers check; undefined for a worker whose receivers generated theirs. */
  auth?: ResolvedWebhookAuth;
  /** The process's (paced) tenant client, or why there is none. */
  tenant: { client: Pick<TenantClient, "updateEventStream"> } | { unavailable: string };
  logger: Logger;
}

/**
 * What `POST /admin/streams/:streamId/connect` does: the service connects the stream with
 * its own webhook credentials, so they never leave it and no shell can push others
 * (a shell's differing credentials made the tenant's deliveries fail with 401).
 */
export function createStreamConnector({ config, auth, tenant, logger }: StreamConnectorOptions): StreamConnector {
  return {
    async connect(streamId, publicUrl) {
      if (!auth) {
        throw new ConnectStreamError(
          "this process runs --role worker, and the receivers' credentials are generated in their DATA_DIR: ask a receiver's admin API (ADMIN_URL), or set WEBHOOK_USERNAME and WEBHOOK_PASSWORD for every role",
          "no_receiver",
        );
      }
      const base = publicUrl ?? config.env.PUBLIC_URL;
      if (base === undefined) throw new ConnectStreamError("no public URL is known: send {\"publicUrl\":\"https://...\"} or set the service's PUBLIC_URL", "no_public_url");
      const endpoint = webhookUrl(base, streamId);
      if ("unavailable" in tenant) throw new ConnectStreamError(`the service has no tenant settings: set ${tenantSettings} for the service and restart it`, "no_tenant");
      const stream = await connectStream(tenant.client, streamId, endpoint, auth);
      logger.info({ streamId, endpoint, auth: auth.method }, "stream connected to this service");
      return stream;
    },
  };
}

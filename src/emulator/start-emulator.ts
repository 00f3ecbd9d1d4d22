import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { RefillMode } from "./allowance.js";
import { createCallLog } from "./call-log.js";
import { createClientQuotas } from "./client-quotas.js";
import { allScopes, createClientRegistry } from "./client-registry.js";
import { createEmulatorApp } from "./create-emulator-app.js";
import { createDeliveryEngine } from "./delivery-engine.js";
import { createDeliveryStore } from "./delivery-store.js";
import { createEventLog } from "./event-log.js";
import { createEventsApiState } from "./event-routes.js";
import { createProfileStore } from "./profile-store.js";
import { createRateLimiter } from "./rate-limiter.js";
import { createStreamStore } from "./stream-store.js";
import { createTokenIssuer } from "./token-issuer.js";

export interface EmulatorOptions {
  /** @defaultValue 0 (any free port; the CLI passes EMULATOR_PORT / --port, default 4010) */
  port?: number;
  /** @defaultValue "127.0.0.1" */
  host?: string;
  /** Multiplies the 1, 2, 4 s retry delays: 0.01 makes them 10, 20, 40 ms. @defaultValue 1 */
  timeScale?: number;
  /** API requests per second of the tenant's bucket, shared by every client; undefined = unlimited, headers still sent. */
  rateLimit?: number;
  /** Requests the tenant's bucket holds, refilled at `rateLimit` a second. @defaultValue rateLimit (full again within a second) */
  rateLimitSize?: number;
  /** How the bucket and per-client quotas refill: continuously, or all at once at the end of each window. @defaultValue "bucket" */
  rateLimitMode?: RefillMode;
  /** @defaultValue "emulator-client" */
  clientId?: string;
  /** A global client holding every scope of docs/tenant.md#authentication-and-scopes. @defaultValue "emulator-secret" */
  clientSecret?: string;
  /** The `a0tenant` of events. @defaultValue "emulator" */
  tenantName?: string;
  /** Per delivery attempt. @defaultValue 10000 */
  webhookTimeoutMs?: number;
  /** Auto-disable a stream after this many consecutive failed deliveries. @defaultValue 500 */
  disableAfterConsecutiveFailures?: number;
  /** Auto-disable a stream after this many failed deliveries in all. @defaultValue 5000 */
  disableAfterTotalFailures?: number;
  /** `offset-only` markers of `GET /api/v2/events` this often while no event is due. @defaultValue 15 */
  eventsHeartbeatSeconds?: number;
  /** Each Events API connection is closed after this long, as the tenant does. @defaultValue 300 */
  eventsCycleSeconds?: number;
  /** Events older than this are gone and an offset before them answers 410. @defaultValue undefined (kept) */
  eventsRetentionSeconds?: number;
  /** Open Events API connections allowed at once; 429 beyond. @defaultValue 1 */
  eventsConnections?: number;
  /** The `retry:` (ms) each Events API stream opens with: how long to wait before reconnecting. @defaultValue 1000 */
  eventsRetryMs?: number;
}

export interface Emulator {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `${url}/api/v2` */
  apiBaseUrl: string;
  /** `${url}/oauth/token` */
  tokenUrl: string;
  /** `${url}/api/v2/` */
  audience: string;
  close(): Promise<void>;
}

/** Starts the local tenant emulator; state lives in memory and dies with it. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const host = options.host ?? "127.0.0.1";
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const audience = `${url}/api/v2/`;

  const streams = createStreamStore();
  const deliveries = createDeliveryStore();
  const log = createEventLog({ retentionMs: options.eventsRetentionSeconds === undefined ? undefined : options.eventsRetentionSeconds * 1000 });
  const eventsApi = createEventsApiState();
  const engine = createDeliveryEngine({
    streams,
    deliveries,
    tenantName: options.tenantName ?? "emulator",
    timeScale: options.timeScale ?? 1,
    webhookTimeoutMs: options.webhookTimeoutMs ?? 10_000,
    disableAfterConsecutiveFailures: options.disableAfterConsecutiveFailures ?? 500,
    disableAfterTotalFailures: options.disableAfterTotalFailures ?? 5000,
    log,
  });
  const app = createEmulatorApp({
    audience,
    tokens: await createTokenIssuer({ issuer: `${url}/`, audience }),
    clients: createClientRegistry([
      { clientId: options.clientId ?? "emulator-client", clientSecret: options.clientSecret ?? "emulator-secret", scopes: [...allScopes], global: true },
    ]),
    limiter: createRateLimiter(options.rateLimit, options.rateLimitMode, options.rateLimitSize),
    quotas: createClientQuotas(options.rateLimitMode ?? "bucket"),
    calls: createCallLog(),
    streams,
    deliveries,
    profiles: createProfileStore(),
    engine,
    log,
    eventsApi,
    deliveryList: { shape: "object", dates: "event" },
    apiOutage: {},
    eventsOptions: {
      heartbeatMs: (options.eventsHeartbeatSeconds ?? 15) * 1000,
      cycleMs: (options.eventsCycleSeconds ?? 300) * 1000,
      connections: options.eventsConnections ?? 1,
      retryMs: options.eventsRetryMs ?? 1000,
    },
  });
  server.on("request", app);

  return {
    url,
    apiBaseUrl: `${url}/api/v2`,
    tokenUrl: `${url}/oauth/token`,
    audience,
    async close() {
      eventsApi.cut();
      await engine.close();
      await closeServer(server);
    },
  };
}

/** Stops accepting, lets requests in flight finish for a moment, then drops what is left. */
async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const deadline = setTimeout(() => server.closeAllConnections(), 1000);
  await closed;
  clearTimeout(deadline);
}

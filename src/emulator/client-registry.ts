import { timingSafeEqual } from "node:crypto";

/** Every scope docs/tenant.md#authentication-and-scopes names: the default client holds them all. */
export const allScopes = [
  "read:event_deliveries",
  "update:event_deliveries",
  "create:event_streams",
  "read:event_streams",
  "update:event_streams",
  "delete:event_streams",
  "read:events",
  "create:event_stream_test_events",
  "create:token_exchange_profiles",
  "read:token_exchange_profiles",
  "update:token_exchange_profiles",
  "delete:token_exchange_profiles",
] as const;

export interface EmulatorClient {
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** Only a global client may read the delivery history (docs/tenant.md#authentication-and-scopes). */
  global: boolean;
}

export interface ClientRegistry {
  /** False when the id is taken. */
  add(client: EmulatorClient): boolean;
  get(clientId: string): EmulatorClient | undefined;
  /** The client when id and secret match, else undefined. */
  authenticate(clientId: string, clientSecret: string): EmulatorClient | undefined;
}

export function createClientRegistry(initial: EmulatorClient[]): ClientRegistry {
  const clients = new Map(initial.map((client) => [client.clientId, client]));
  return {
    add(client) {
      if (clients.has(client.clientId)) return false;
      clients.set(client.clientId, client);
      return true;
    },
    get: (clientId) => clients.get(clientId),
    authenticate(clientId, clientSecret) {
      const client = clients.get(clientId);
      return client && sameText(client.clientSecret, clientSecret) ? client : undefined;
    },
  };
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** A per-client quota as the tenant announces it: `requests` per `seconds`, `remaining` left. */
export interface ClientQuota {
  requests: number;
  seconds: number;
  remaining?: number;
}

/**
 * `Auth0-RateLimit: client;q=10;t=1;r=9` (docs/tenant.md#rate-limits): the quota
 * a custom rate-limit policy holds this client to, or undefined when the answer names none
 * (or names it in a way we cannot read: we then pace by the other limits shown).
 */
export function readClientQuota(headers: Headers): ClientQuota | undefined {
  const value = headers.get("auth0-ratelimit");
  if (value === null) return undefined;
  const [scope, ...parameters] = value.split(";").map((part) => part.trim());
  if (scope !== "client") return undefined;
  const fields = new Map(parameters.map((parameter) => parameter.split("=").map((part) => part.trim()) as [string, string | undefined]));
  const number = (key: string) => {
    const text = fields.get(key);
    return text !== undefined && /^\d+(\.\d+)?$/.test(text) ? Number(text) : undefined;
  };
  const requests = number("q");
  const seconds = number("t");
  if (requests === undefined || seconds === undefined || !(requests > 0) || !(seconds > 0)) return undefined;
  return { requests, seconds, remaining: number("r") };
}

export interface AccessToken {
  value: string;
  /** Seconds the token is valid for, from the token endpoint's `expires_in`. */
  expiresIn: number;
}

export interface TokenSource {
  /** A valid token: the cached one, or a fresh one (one request shared by concurrent callers). */
  get(): Promise<string>;
  /** Forgets `token` after the API refused it (401), so the next get() fetches a new one. */
  invalidate(token: string): void;
}

/** Tokens are reused until this long before they expire, as the official SDK does (docs/tenant.md#tokens). */
export const tokenExpiryMarginMs = 10_000;

/**
 * Caches the client-credentials token. Concurrent callers share the one request in
 * flight, so a burst of reconcile calls costs one token, and a failed request is not
 * cached: the next caller tries again.
 */
export function createTokenSource(fetchToken: () => Promise<AccessToken>, now: () => number = Date.now): TokenSource {
  let cached: { value: string; renewAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  return {
    get() {
      if (cached && now() < cached.renewAt) return Promise.resolve(cached.value);
      inFlight ??= fetchToken()
        .then((token) => {
          cached = { value: token.value, renewAt: now() + token.expiresIn * 1000 - tokenExpiryMarginMs };
          return token.value;
        })
        .finally(() => {
          inFlight = undefined;
        });
      return inFlight;
    },
    invalidate(token) {
      if (cached?.value === token) cached = undefined;
    },
  };
}

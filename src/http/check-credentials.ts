import { hash, timingSafeEqual } from "node:crypto";
import type { ResolvedWebhookAuth } from "../credentials/webhook-credentials.js";

type Headers = Record<string, string | string[] | undefined>;

// One-shot: no Hash object per request (createHash, update, digest; docs/benchmarks.md).
const digest = (value: string) => hash("sha256", value, "buffer");

/**
 * A constant-time check against the current secret and, during a rotation, the previous
 * one. Every side is compared as a SHA-256 digest, so neither the content nor the length
 * of a secret leaks through timing; both are always compared, so timing tells neither
 * which matched nor whether a previous one is set. `onPrevious` hears of each request the
 * previous one let in. The given value is digested once for both: one SHA-256 per
 * request, not two (docs/benchmarks.md).
 */
export function equalsCurrentOrPrevious(current: string, previous: string | undefined, onPrevious: () => void = () => {}): (given: string) => boolean {
  const currentDigest = digest(current);
  const previousDigest = digest(previous ?? current);
  return (given) => {
    const givenDigest = digest(given);
    const currentMatches = timingSafeEqual(givenDigest, currentDigest);
    const previousMatches = timingSafeEqual(givenDigest, previousDigest);
    if (!currentMatches && previousMatches && previous !== undefined) onPrevious();
    return currentMatches || (previousMatches && previous !== undefined);
  };
}

/** Builds the check for the configured method; returns a problem (no secret in it) or undefined. */
export function createCredentialCheck(auth: ResolvedWebhookAuth, onPrevious: () => void = () => {}): (headers: Headers) => string | undefined {
  switch (auth.method) {
    case "none":
      return () => undefined;
    case "basic": {
      const basic = (password: string) => `Basic ${Buffer.from(`${auth.username}:${password}`).toString("base64")}`;
      const isExpected = equalsCurrentOrPrevious(basic(auth.password), auth.previous === undefined ? undefined : basic(auth.previous), onPrevious);
      return (headers) => {
        const given = first(headers.authorization);
        if (!given) return "the Authorization header is missing: send Basic credentials";
        if (!/^basic /i.test(given)) return "the Authorization header must use the Basic scheme";
        // Normalise the scheme's case only; the credentials compare byte for byte.
        return isExpected(`Basic ${given.slice(6).trim()}`) ? undefined : "the Basic credentials are wrong";
      };
    }
    case "bearer": {
      const isToken = equalsCurrentOrPrevious(auth.token, auth.previous, onPrevious);
      return (headers) => {
        const given = first(headers.authorization);
        if (!given) return "the Authorization header is missing: send a Bearer token";
        if (!/^bearer /i.test(given)) return "the Authorization header must use the Bearer scheme";
        return isToken(given.slice(7).trim()) ? undefined : "the Bearer token is wrong";
      };
    }
    case "custom_header": {
      const name = auth.headerName.toLowerCase();
      const isValue = equalsCurrentOrPrevious(auth.headerValue, auth.previous, onPrevious);
      return (headers) => {
        const given = first(headers[name]);
        if (given === undefined) return `the ${auth.headerName} header is missing`;
        return isValue(given) ? undefined : `the ${auth.headerName} header is wrong`;
      };
    }
  }
}

/** The WWW-Authenticate challenge for a 401 (RFC 9110 §11.6.1), where the method has one. */
export function challengeFor(auth: ResolvedWebhookAuth): string | undefined {
  if (auth.method === "basic") return 'Basic realm="streamkeeper", charset="UTF-8"';
  if (auth.method === "bearer") return 'Bearer realm="streamkeeper"';
  return undefined;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

import { randomUUID } from "node:crypto";
import { SignJWT, errors, exportJWK, generateKeyPair, jwtVerify, type JWK } from "jose";
import { ApiError } from "./api-error.js";

/** Lifetime of an access token, as the real token endpoint answers (docs/tenant.md#tokens). */
export const tokenLifetimeSeconds = 86_400;

export interface TokenClaims {
  clientId: string;
  scopes: string[];
}

export interface TokenIssuer {
  issue(clientId: string, scopes: string[]): Promise<string>;
  /** Verifies signature, expiry, issuer and audience; throws an ApiError 401 in the tenant's words. */
  verify(token: string): Promise<TokenClaims>;
  jwks(): { keys: JWK[] };
}

/**
 * Signs RS256 access tokens with the real claims (iss, sub `<client_id>@clients`, aud,
 * azp, scope, gty, iat, exp) under one key pair made at start, served at
 * `/.well-known/jwks.json` with its `kid`.
 */
export async function createTokenIssuer(options: { issuer: string; audience: string }): Promise<TokenIssuer> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const kid = randomUUID();
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" };

  return {
    async issue(clientId, scopes) {
      return new SignJWT({ azp: clientId, scope: scopes.join(" "), gty: "client-credentials" })
        .setProtectedHeader({ alg: "RS256", typ: "JWT", kid })
        .setIssuer(options.issuer)
        .setSubject(`${clientId}@clients`)
        .setAudience(options.audience)
        .setIssuedAt()
        .setExpirationTime(`${tokenLifetimeSeconds}s`)
        .sign(privateKey);
    },

    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, publicKey, {
          algorithms: ["RS256"],
          issuer: options.issuer,
          audience: options.audience,
        });
        if (typeof payload.azp !== "string") throw new ApiError(401, "Invalid token");
        const scope = typeof payload.scope === "string" ? payload.scope : "";
        return { clientId: payload.azp, scopes: scope.split(" ").filter(Boolean) };
      } catch (error) {
        throw asUnauthorized(error);
      }
    },

    jwks: () => ({ keys: [jwk] }),
  };
}

/** The messages the real API gives for each way a token can be wrong. */
function asUnauthorized(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof errors.JWSSignatureVerificationFailed) return new ApiError(401, "Invalid signature.");
  if (error instanceof errors.JWTExpired) return new ApiError(401, "Expired token received for JSON Web Token validation");
  if (error instanceof errors.JWTClaimValidationFailed && error.claim === "aud") return new ApiError(401, "Bad audience");
  return new ApiError(401, "Invalid token");
}

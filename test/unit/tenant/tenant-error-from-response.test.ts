import { describe, expect, it } from "vitest";
import {
  TenantApiError,
  TenantForbiddenError,
  TenantNotFoundError,
  TenantRateLimitError,
  TenantServerError,
  TenantUnauthorizedError,
} from "../../../src/tenant/tenant-api-error.js";
import { tenantErrorFromResponse } from "../../../src/tenant/tenant-error-from-response.js";

const now = Date.parse("2025-09-08T06:35:00.000Z");
const answer = (status: number, body: object | string, headers: Record<string, string> = {}) =>
  tenantErrorFromResponse({
    operation: "get_delivery",
    status,
    headers: new Headers(headers),
    body: typeof body === "string" ? body : JSON.stringify(body),
    secrets: ["client-secret-value"],
    now,
  });

describe("tenantErrorFromResponse", () => {
  it("when the tenant answers 403 naming the scope, then the error names it and says how to fix it", () => {
    const error = answer(403, { statusCode: 403, error: "Forbidden", message: "Insufficient scope; expected any of: read:event_deliveries.", errorCode: "insufficient_scope" });
    expect(error).toBeInstanceOf(TenantForbiddenError);
    expect(error.message).toContain("insufficient scope: the client needs read:event_deliveries; grant it to the application in the tenant");
    expect((error as TenantForbiddenError).scope).toBe("read:event_deliveries");
    expect(error.errorCode).toBe("insufficient_scope");
    expect(error.kind).toBe("forbidden");
  });

  it("when a 403 names no scope, then the scope of the operation is named", () => {
    expect(answer(403, { message: "Forbidden" }).message).toContain("needs read:event_deliveries");
  });

  it("when the answer is 401, 404, 5xx or another 4xx, then the class, status and tenant message are kept", () => {
    const unauthorized = answer(401, { statusCode: 401, error: "Unauthorized", message: "Invalid token" }, { "x-request-id": "req-1" });
    expect(unauthorized).toBeInstanceOf(TenantUnauthorizedError);
    expect(unauthorized.requestId).toBe("req-1");
    expect(unauthorized.message).toMatch(/global client/);
    const notFound = answer(404, { statusCode: 404, error: "Not Found", message: "The requested stream does not exist." });
    expect(notFound).toBeInstanceOf(TenantNotFoundError);
    expect(notFound.tenantMessage).toBe("The requested stream does not exist.");
    expect(answer(502, "<html>bad gateway</html>")).toBeInstanceOf(TenantServerError);
    const conflict = answer(409, { message: "not redeliverable" });
    expect(conflict.constructor).toBe(TenantApiError);
    expect(conflict.status).toBe(409);
  });

  it("when the answer is 429, then retryAfterMs comes from the reset header", () => {
    const error = answer(429, { statusCode: 429, message: "Too Many Requests", errorCode: "too_many_requests" }, { "x-ratelimit-reset": String(now / 1000 + 4) });
    expect(error).toBeInstanceOf(TenantRateLimitError);
    expect(error.retryAfterMs).toBe(4000);
    expect(error.message).toContain("in 4 s");
  });

  it("when the token endpoint refuses, then its error and description are used", () => {
    const error = tenantErrorFromResponse({
      operation: "token",
      status: 401,
      headers: new Headers(),
      body: JSON.stringify({ error: "access_denied", error_description: "Unauthorized" }),
      secrets: [],
    });
    expect(error.errorCode).toBe("access_denied");
    expect(error.message).toContain("MGMT_CLIENT_SECRET");
  });

  it("when the body echoes credentials, then they are redacted from the message", () => {
    const body = { message: "bad client_secret=client-secret-value with Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2ln" };
    const error = answer(400, body);
    expect(error.message).not.toContain("client-secret-value");
    expect(error.message).not.toContain("eyJ");
    expect(error.message).toContain("[redacted]");
  });
});

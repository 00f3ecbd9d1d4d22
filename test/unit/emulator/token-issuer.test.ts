import { describe, expect, it } from "vitest";
import { createTokenIssuer } from "../../../src/emulator/token-issuer.js";

const options = { issuer: "http://127.0.0.1:1/", audience: "http://127.0.0.1:1/api/v2/" };

describe("createTokenIssuer", () => {
  it("when a token it issued comes back, then it yields the client and its scopes", async () => {
    const issuer = await createTokenIssuer(options);
    const token = await issuer.issue("c1", ["read:event_streams", "read:event_deliveries"]);
    await expect(issuer.verify(token)).resolves.toEqual({ clientId: "c1", scopes: ["read:event_streams", "read:event_deliveries"] });
  });

  it("when the signature or audience is wrong, then a 401 in the tenant's words", async () => {
    const issuer = await createTokenIssuer(options);
    const other = await createTokenIssuer(options);
    await expect(issuer.verify(await other.issue("c1", []))).rejects.toMatchObject({ statusCode: 401, message: "Invalid signature." });
    const elsewhere = await createTokenIssuer({ ...options, audience: "https://elsewhere/api/v2/" });
    await expect(elsewhere.verify(await issuer.issue("c1", []))).rejects.toMatchObject({ statusCode: 401 });
    await expect(issuer.verify("garbage")).rejects.toMatchObject({ statusCode: 401, message: "Invalid token" });
  });
});

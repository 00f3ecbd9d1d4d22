import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signWebhook } from "../../../src/dispatch/sign-webhook.js";

const body = JSON.stringify({ id: "evt_6SfwXrtm8nVcjzzNCFFH1L", type: "user.created", data: { object: { email: "a@example.com" } } });

describe("signWebhook", () => {
  it("when the secret is whsec_<base64>, then the standardwebhooks package verifies the headers", () => {
    const secret = `whsec_${Buffer.from("a very secret key of 32 bytes!!!").toString("base64")}`;
    const now = Math.floor(Date.now() / 1000);
    const headers = { "webhook-id": "evt_6SfwXrtm8nVcjzzNCFFH1L", ...signWebhook(secret, "evt_6SfwXrtm8nVcjzzNCFFH1L", now, body) };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it("when the secret is a plain string, then its raw bytes are the key", () => {
    const secret = "plain-secret";
    const now = Math.floor(Date.now() / 1000);
    const headers = { "webhook-id": "evt_1", ...signWebhook(secret, "evt_1", now, body) };
    // standardwebhooks takes raw bytes as a Uint8Array key.
    expect(new Webhook(new TextEncoder().encode(secret), { format: "raw" }).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it("when the body changes, then verification fails", () => {
    const secret = `whsec_${Buffer.from("key").toString("base64")}`;
    const headers = { "webhook-id": "evt_1", ...signWebhook(secret, "evt_1", Math.floor(Date.now() / 1000), body) };
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
  });

  it("when signing, then the headers have the Standard Webhooks shape", () => {
    expect(signWebhook("whsec_a2V5", "evt_1", 1_700_000_000, "{}")).toEqual({
      "webhook-timestamp": "1700000000",
      "webhook-signature": expect.stringMatching(/^v1,[A-Za-z0-9+/]+=*$/),
    });
  });
});

import { createHmac } from "node:crypto";

/**
 * Standard Webhooks signature headers (standardwebhooks.com, "Signature scheme"): HMAC-SHA256
 * over `<id>.<timestamp>.<body>`, base64, sent as `v1,<signature>`. A `whsec_` secret is
 * base64 after the prefix; any other secret is used as its raw UTF-8 bytes.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = secret.startsWith("whsec_") ? Buffer.from(secret.slice("whsec_".length), "base64") : Buffer.from(secret, "utf8");
  const signature = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return { "webhook-timestamp": String(timestampSeconds), "webhook-signature": `v1,${signature}` };
}

/** The webhook credentials every test's service starts with (service-process-env.ts). */
export const testCredentials = { username: "tenant", password: "s3cret-webhook-password" };

/** `Basic base64(username:password)`, as the tenant sends it (docs/tenant.md#webhook-delivery). */
export function basicAuthorization(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
}

/** The Authorization header of a webhook with the test credentials. */
export const webhookAuthorization = basicAuthorization(testCredentials.username, testCredentials.password);

/** Headers of an admin API call: `Authorization: Bearer <ADMIN_TOKEN>`, plus `extra`. */
export function adminHeaders(adminToken: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${adminToken}`, ...extra };
}

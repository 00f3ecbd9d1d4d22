import { afterEach, describe, expect, it } from "vitest";
import { userEvent } from "../helpers/fixtures.js";
import { basicAuthorization, testCredentials } from "../helpers/credentials.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

/**
 * CONTRACT.md "Settings": every `*_PREVIOUS_*` secret is accepted beside the current one
 * while it is set (`webhook_auth_previous_total` / `admin_auth_previous_total` count its
 * uses), and refused once it is unset. One case per setting, so a method whose previous
 * secret is dropped (src/config/config.ts webhookAuthOf, src/http/check-credentials.ts) fails here.
 * Shown failing by hand: `previous` left out of the bearer branch of createCredentialCheck,
 * of the custom_header branch, and of adminAuth (each: the previous secret answered 401);
 * `onPrevious` not called (the counter stays).
 */
const webhookCases = [
  {
    setting: "WEBHOOK_PREVIOUS_PASSWORD",
    env: { WEBHOOK_AUTH: "basic", WEBHOOK_USERNAME: testCredentials.username, WEBHOOK_PASSWORD: "password-new" },
    previous: "password-old",
    headers: (secret: string): Record<string, string> => ({ authorization: basicAuthorization(testCredentials.username, secret) }),
  },
  {
    setting: "WEBHOOK_PREVIOUS_TOKEN",
    env: { WEBHOOK_AUTH: "bearer", WEBHOOK_TOKEN: "token-new" },
    previous: "token-old",
    headers: (secret: string): Record<string, string> => ({ authorization: `Bearer ${secret}` }),
  },
  {
    setting: "WEBHOOK_PREVIOUS_HEADER_VALUE",
    env: { WEBHOOK_AUTH: "custom_header", WEBHOOK_HEADER_NAME: "x-tenant-secret", WEBHOOK_HEADER_VALUE: "value-new" },
    previous: "value-old",
    headers: (secret: string): Record<string, string> => ({ "x-tenant-secret": secret }),
  },
] as const;

describe("contract: every *_PREVIOUS_* secret", () => {
  const running: TestService[] = [];
  afterEach(async () => {
    for (const service of running.splice(0)) await service.close();
  });
  const start = async (env: Record<string, string>) => {
    // The test credentials of service-process-env.ts are basic ones: cleared for the other methods.
    const service = await startTestService({ WEBHOOK_USERNAME: "", WEBHOOK_PASSWORD: "", ...env }, "receiver");
    running.push(service);
    return service;
  };
  const counter = async (service: TestService, name: string) =>
    Number(new RegExp(`^streamkeeper_${name} (\\d+)`, "m").exec(await (await fetch(`${service.adminUrl}/metrics`)).text())?.[1] ?? Number.NaN);

  it.each(webhookCases)("when $setting is set, then the previous secret is let in and counted; once unset, it is refused with 401", async ({ setting, env, previous, headers }) => {
    const send = (service: TestService, secret: string) =>
      fetch(`${service.publicUrl}/webhooks/est_38ANnv8pQhqsZrX2VFbftv`, { method: "POST", body: JSON.stringify(userEvent()), headers: { "content-type": "application/json", ...headers(secret) } });
    const current = Object.values(env).at(-1)!;

    const rotating = await start({ ...env, [setting]: previous });
    const usesBefore = await counter(rotating, "webhook_auth_previous_total");
    expect((await send(rotating, previous)).status).toBe(202);
    expect(await counter(rotating, "webhook_auth_previous_total")).toBe(usesBefore + 1);
    expect((await send(rotating, current)).status).toBe(202);
    // The current secret is not a use of the previous one.
    expect(await counter(rotating, "webhook_auth_previous_total")).toBe(usesBefore + 1);
    expect((await send(rotating, "neither-of-them")).status).toBe(401);

    const after = await start(env);
    expect((await send(after, previous)).status).toBe(401);
    expect((await send(after, current)).status).toBe(202);
  });

  it("when ADMIN_PREVIOUS_TOKEN is set, then the previous admin token is let in and counted; once unset, it is refused with 401", async () => {
    const ask = (service: TestService, token: string) => fetch(`${service.adminUrl}/admin/routes`, { headers: { authorization: `Bearer ${token}` } }).then((answer) => answer.status);
    const rotating = await start({ WEBHOOK_USERNAME: testCredentials.username, WEBHOOK_PASSWORD: testCredentials.password, ADMIN_TOKEN: "admin-new", ADMIN_PREVIOUS_TOKEN: "admin-old" });
    const usesBefore = await counter(rotating, "admin_auth_previous_total");
    expect(await ask(rotating, "admin-old")).toBe(200);
    expect(await counter(rotating, "admin_auth_previous_total")).toBe(usesBefore + 1);
    expect(await ask(rotating, "admin-new")).toBe(200);
    expect(await counter(rotating, "admin_auth_previous_total")).toBe(usesBefore + 1);

    const after = await start({ WEBHOOK_USERNAME: testCredentials.username, WEBHOOK_PASSWORD: testCredentials.password, ADMIN_TOKEN: "admin-new" });
    expect(await ask(after, "admin-old")).toBe(401);
    expect(await ask(after, "admin-new")).toBe(200);
  });
});

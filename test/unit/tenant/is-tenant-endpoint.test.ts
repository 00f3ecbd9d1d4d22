import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/config.js";
import { webhookUrl } from "../../../src/streams/connect-stream.js";
import { isTenantEndpoint } from "../../../src/tenant/is-tenant-endpoint.js";
import { streamIdPattern } from "../../../src/tenant/stream-id.js";
import { validateStreamPatch } from "../../../src/tenant/stream-patch.js";

const accepted = ["https://hooks.example.com", "https://10.0.0.1/base", "http://127.0.0.1:8080", "http://127.1.2.3", "http://localhost:3000", "http://[::1]:8080"];
const refused = ["http://10.0.0.1", "http://localhost.example.com", "http://128.0.0.1", "http://hooks.example.com", "ftp://127.0.0.1"];
const basic = { method: "basic", username: "streamkeeper", password: "s3cret-pass" };

/** The one rule, as each of its three users applies it: true when it takes the URL. */
const takers = {
  "PUBLIC_URL (config.ts)": (url: string) => {
    try {
      return loadConfig({ PUBLIC_URL: url }).env.PUBLIC_URL !== undefined;
    } catch {
      return false;
    }
  },
  "streams connect (connect-stream.ts)": (url: string) => {
    try {
      return webhookUrl(url, "est_aD5AUDqZbHFcMoEx2LxAk9").startsWith(url);
    } catch {
      return false;
    }
  },
  "a stream's endpoint (stream-patch.ts)": (url: string) => {
    try {
      return Boolean(validateStreamPatch({ destination: { type: "webhook", configuration: { webhook_endpoint: url, webhook_authorization: basic } } }));
    } catch {
      return false;
    }
  },
};

describe("isTenantEndpoint", () => {
  it("when the URL is https, or http on a loopback host, then the tenant sends to it; otherwise not", () => {
    expect(accepted.filter((url) => !isTenantEndpoint(new URL(url)))).toEqual([]);
    expect(refused.filter((url) => isTenantEndpoint(new URL(url)))).toEqual([]);
  });

  it.each(Object.entries(takers))("when %s checks a URL, then it takes exactly what isTenantEndpoint takes", (_, takes) => {
    for (const url of [...accepted, ...refused]) expect([url, takes(url)]).toEqual([url, isTenantEndpoint(new URL(url))]);
  });
});

describe("streamIdPattern", () => {
  it("when an id is est_ and 22 letters or digits, then it matches; otherwise not", () => {
    expect(streamIdPattern.test("est_aD5AUDqZbHFcMoEx2LxAk9")).toBe(true);
    for (const id of ["est_aD5AUDqZbHFcMoEx2LxAk", "est_aD5AUDqZbHFcMoEx2LxAk9x", "evt_aD5AUDqZbHFcMoEx2LxAk9", "est_aD5AUDqZbHFcMoEx2LxA-9"]) expect(streamIdPattern.test(id)).toBe(false);
  });

  it("when RECONCILE_SWEEP_STREAMS holds a malformed id, then the setting is refused", () => {
    expect(loadConfig({ RECONCILE_SWEEP_STREAMS: "est_aD5AUDqZbHFcMoEx2LxAk9" }).env.RECONCILE_SWEEP_STREAMS).toEqual(["est_aD5AUDqZbHFcMoEx2LxAk9"]);
    expect(() => loadConfig({ RECONCILE_SWEEP_STREAMS: "est_short" })).toThrow(/give stream ids such as est_aD5AUDqZbHFcMoEx2LxAk9/);
  });
});

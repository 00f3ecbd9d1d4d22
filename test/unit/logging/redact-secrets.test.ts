import { describe, expect, it } from "vitest";
import { redactSecrets, redactUrlCredentials } from "../../../src/logging/redact-secrets.js";

describe("redactUrlCredentials", () => {
  it("when a URL carries user info, then all of it is replaced, even a password holding / or @", () => {
    expect(redactUrlCredentials("redis://user:pa/ss@word@127.0.0.1:6379/0")).toBe("redis://[redacted]@127.0.0.1:6379/0");
    expect(redactUrlCredentials("rediss+cluster://:s3cret@a:7000,b:7001")).toBe("rediss+cluster://[redacted]@a:7000,b:7001");
  });

  it("when a URL has no user info, then it is unchanged", () => {
    expect(redactUrlCredentials("http://127.0.0.1:4010/api/v2")).toBe("http://127.0.0.1:4010/api/v2");
  });
});

describe("redactSecrets", () => {
  it("when text holds a known secret or a credential shape, then both are replaced", () => {
    expect(redactSecrets("client_secret=abcd1234 and Bearer xyz.abc plus hunter22", ["hunter22"])).toBe("client_secret=[redacted] and Bearer [redacted] plus [redacted]");
  });
});

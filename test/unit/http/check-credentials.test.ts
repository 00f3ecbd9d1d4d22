import { describe, expect, it } from "vitest";
import { challengeFor, createCredentialCheck, equalsCurrentOrPrevious } from "../../../src/http/check-credentials.js";
import { problemDocument } from "../../../src/http/problem.js";
import { basicAuthorization as basic } from "../../helpers/credentials.js";


describe("createCredentialCheck", () => {
  it("when basic credentials are configured, then only those pass, with the scheme in any case", () => {
    const check = createCredentialCheck({ method: "basic", username: "tenant", password: "pw" });
    expect(check({ authorization: basic("tenant", "pw") })).toBeUndefined();
    expect(check({ authorization: basic("tenant", "pw").replace("Basic", "bASIC") })).toBeUndefined();
    expect(check({ authorization: basic("tenant", "pw2") })).toBe("the Basic credentials are wrong");
    expect(check({ authorization: "Bearer pw" })).toBe("the Authorization header must use the Basic scheme");
    expect(check({})).toBe("the Authorization header is missing: send Basic credentials");
  });

  it("when the scheme is only part of a longer word, or spaced out from its credentials, then the word is refused and the spaces are allowed (RFC 9110: 1*SP)", () => {
    const basicCheck = createCredentialCheck({ method: "basic", username: "tenant", password: "pw" });
    const credentials = basic("tenant", "pw").slice("Basic ".length);
    expect(basicCheck({ authorization: `XBasic ${credentials}` })).toBe("the Authorization header must use the Basic scheme");
    expect(basicCheck({ authorization: `Basic   ${credentials}` })).toBeUndefined();
    const bearerCheck = createCredentialCheck({ method: "bearer", token: "t0ken" });
    expect(bearerCheck({ authorization: "XBearer t0ken" })).toBe("the Authorization header must use the Bearer scheme");
    expect(bearerCheck({ authorization: "Bearer   t0ken" })).toBeUndefined();
    expect(bearerCheck({})).toBe("the Authorization header is missing: send a Bearer token");
  });

  it("when a bearer token is configured, then the token compares exactly", () => {
    const check = createCredentialCheck({ method: "bearer", token: "t0ken" });
    expect(check({ authorization: "Bearer t0ken" })).toBeUndefined();
    expect(check({ authorization: "Bearer t0ken2" })).toBe("the Bearer token is wrong");
    expect(check({ authorization: basic("a", "b") })).toBe("the Authorization header must use the Bearer scheme");
  });

  it("when a custom header is configured, then its name is case-insensitive and its value exact", () => {
    const check = createCredentialCheck({ method: "custom_header", headerName: "X-Hook-Key", headerValue: "v" });
    expect(check({ "x-hook-key": "v" })).toBeUndefined();
    expect(check({ "x-hook-key": "V" })).toBe("the X-Hook-Key header is wrong");
    expect(check({})).toBe("the X-Hook-Key header is missing");
  });

  it("when no authorization is configured, then every request passes", () => {
    expect(createCredentialCheck({ method: "none" })({})).toBeUndefined();
  });

  it("when a problem is reported, then it never holds the configured secret", () => {
    const check = createCredentialCheck({ method: "bearer", token: "very-secret-token" });
    expect(check({ authorization: "Bearer very-secret-tokenX" })).not.toContain("very-secret-token");
  });
});

describe("equalsCurrentOrPrevious and challengeFor", () => {
  it("when secrets differ in length or content, then they are unequal; equal ones are equal", () => {
    const isSecret = equalsCurrentOrPrevious("abc", undefined);
    expect(isSecret("abc")).toBe(true);
    expect(isSecret("abcd")).toBe(false); // longer
    expect(isSecret("ab")).toBe(false); // shorter
    expect(isSecret("")).toBe(false);
    expect(isSecret("abd")).toBe(false); // same length, last byte differs
    expect(isSecret("xbc")).toBe(false); // same length, first byte differs
    expect(isSecret("ABC")).toBe(false); // case counts
  });

  it("when the method has a challenge (RFC 9110), then the 401 names it", () => {
    expect(challengeFor({ method: "basic", username: "u", password: "p" })).toBe('Basic realm="streamkeeper", charset="UTF-8"');
    expect(challengeFor({ method: "bearer", token: "t" })).toBe('Bearer realm="streamkeeper"');
    expect(challengeFor({ method: "none" })).toBeUndefined();
  });
});

describe("problemDocument", () => {
  it("when a status and a detail are given, then the RFC 9457 document carries the status's title", () => {
    expect(problemDocument(413, "the body is larger than 1048576 bytes")).toEqual({ type: "about:blank", title: "Payload Too Large", status: 413, detail: "the body is larger than 1048576 bytes" });
    expect(problemDocument(599, "odd")).toMatchObject({ title: "Error" });
  });
});

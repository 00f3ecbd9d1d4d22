import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const problemsOf = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
};

/** Where zod's own text showed through ("Invalid input: expected number, received NaN"), our words (issue 18). */
describe("config messages in the project's words", () => {
  it.each([
    [{ PORT: "eighty" }, 'PORT: use a whole number from 0 to 65535 (got "eighty")'],
    [{ PORT: "65536" }, 'PORT: use a whole number from 0 to 65535 (got "65536")'],
    [{ PORT: "80.5" }, 'PORT: use a whole number from 0 to 65535 (got "80.5")'],
    [{ ADMIN_PORT: "-1" }, 'ADMIN_PORT: use a whole number from 0 to 65535 (got "-1")'],
    [{ DOWNSTREAM_URL: "ftp://files.example.com/in" }, 'DOWNSTREAM_URL: use an http:// or https:// URL (got "ftp://files.example.com/in")'],
    [{ DOWNSTREAM_URL: "hooks.example.com" }, 'DOWNSTREAM_URL: use an http:// or https:// URL (got "hooks.example.com")'],
    [{ ADMIN_URL: "ws://127.0.0.1:9090" }, 'ADMIN_URL: use an http:// or https:// URL (got "ws://127.0.0.1:9090")'],
    [{ PUBLIC_URL: "hooks" }, 'PUBLIC_URL: give the URL at which the tenant reaches this service, e.g. https://hooks.example.com (got "hooks")'],
  ])("when %o, then the problem reads word for word", (env, message) => {
    expect(problemsOf(env)).toEqual([message]);
  });
});

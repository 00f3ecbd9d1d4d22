import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, settings } from "../../../src/config/config.js";
import { problemsOf } from "../../helpers/config-problems.js";


/** Where zod's own text showed through ("Invalid input: expected number, received NaN"), our words. */
describe("config messages in the project's words", () => {
  it.each([
    [{ PORT: "eighty" }, 'PORT: use a whole number from 0 to 65535 (got "eighty")'],
    [{ PORT: "65536" }, 'PORT: use a whole number from 0 to 65535 (got "65536")'],
    [{ PORT: "80.5" }, 'PORT: use a whole number from 0 to 65535 (got "80.5")'],
    [{ ADMIN_PORT: "-1" }, 'ADMIN_PORT: use a whole number from 0 to 65535 (got "-1")'],
    [{ DOWNSTREAM_URL: "ftp://files.example.com/in" }, 'DOWNSTREAM_URL: use an http:// or https:// URL (got "ftp://files.example.com/in")'],
    [{ DOWNSTREAM_URL: "hooks.example.com" }, 'DOWNSTREAM_URL: use an http:// or https:// URL (got "hooks.example.com")'],
    [{ ADMIN_URL: "ws://127.0.0.1:9090" }, 'ADMIN_URL: use an http:// or https:// URL (got "ws://127.0.0.1:9090")'],
    [{ REDIS_MIN_REPLICAS: "-1" }, 'REDIS_MIN_REPLICAS: give a whole number of replicas, 0 or more; 0 does not wait for replicas (got "-1")'],
    [{ REDIS_MIN_REPLICAS: "one" }, 'REDIS_MIN_REPLICAS: give a whole number of replicas, 0 or more; 0 does not wait for replicas (got "one")'],
    [{ WEBHOOK_MAX_BODY_BYTES: "1000" }, 'WEBHOOK_MAX_BODY_BYTES: give a whole number of bytes, 1024 or more (got "1000")'],
    [{ DEDUPE_TTL_SECONDS: "a week" }, 'DEDUPE_TTL_SECONDS: give a whole number of seconds, 3600 or more; an hour at least: the tenant retries a delivery for seconds to minutes, and those retries must count as duplicates (got "a week")'],
    [{ LEDGER_SHARDS: "0" }, 'LEDGER_SHARDS: give a whole number of shards from 1 to 1000000 (got "0")'],
    [{ LEDGER_SHARDS: "2000000" }, 'LEDGER_SHARDS: give a whole number of shards from 1 to 1000000 (got "2000000")'],
    [{ LOG_REPEAT_INTERVAL_SECONDS: "0" }, 'LOG_REPEAT_INTERVAL_SECONDS: give a number of seconds above 0, e.g. 60 (got "0")'],
    [{ SHUTDOWN_TIMEOUT_MS: "soon" }, 'SHUTDOWN_TIMEOUT_MS: give a whole number of milliseconds, 0 or more (got "soon")'],
    [{ DISPATCH_BACKOFF_BASE_MS: "0" }, 'DISPATCH_BACKOFF_BASE_MS: give a whole number of milliseconds, 1 or more (got "0")'],
    [{ DISPATCH_BACKOFF_MAX_MS: "1.5" }, 'DISPATCH_BACKOFF_MAX_MS: give a whole number of milliseconds, 1 or more (got "1.5")'],
    [{ DISPATCH_RETRY_WINDOW_SECONDS: "0" }, 'DISPATCH_RETRY_WINDOW_SECONDS: give a whole number of seconds, 1 or more (got "0")'],
    [{ DISPATCH_CIRCUIT_FAILURES: "2.5" }, 'DISPATCH_CIRCUIT_FAILURES: give a whole number of failures, 0 or more; 0 turns the circuit off (got "2.5")'],
    [{ DISPATCH_CIRCUIT_PROBE_MIN_MS: "5" }, 'DISPATCH_CIRCUIT_PROBE_MIN_MS: give a whole number of milliseconds, 10 or more (got "5")'],
    [{ DISPATCH_CIRCUIT_PROBE_MAX_MS: "x" }, 'DISPATCH_CIRCUIT_PROBE_MAX_MS: give a whole number of milliseconds, 10 or more (got "x")'],
    [{ DISPATCH_LOCK_DURATION_MS: "999" }, 'DISPATCH_LOCK_DURATION_MS: give a whole number of milliseconds, 1000 or more (got "999")'],
    [{ COMPLETED_JOB_RETENTION_SECONDS: "-1.5" }, 'COMPLETED_JOB_RETENTION_SECONDS: give a whole number of seconds, 0 or more (got "-1.5")'],
    [{ COMPLETED_JOB_RETENTION_COUNT: "many" }, 'COMPLETED_JOB_RETENTION_COUNT: give a whole number of jobs, 0 or more (got "many")'],
    [{ RECONCILE_RATE_SHARE: "1.5" }, 'RECONCILE_RATE_SHARE: give a fraction above 0 and up to 1, e.g. 0.5 (got "1.5")'],
    [{ RECONCILE_RATE_SHARE: "half" }, 'RECONCILE_RATE_SHARE: give a fraction above 0 and up to 1, e.g. 0.5 (got "half")'],
    [{ RECONCILE_RATE_PER_SECOND: "0" }, 'RECONCILE_RATE_PER_SECOND: give a number of calls per second above 0, e.g. 10; leave it unset for no cap (got "0")'],
    [{ RECONCILE_SWEEP_INTERVAL_SECONDS: "five minutes" }, 'RECONCILE_SWEEP_INTERVAL_SECONDS: give a whole number of seconds, 0 or more; 0 turns the sweep off (got "five minutes")'],
    [{ RECONCILE_SWEEP_LOOKBACK_SECONDS: "0" }, 'RECONCILE_SWEEP_LOOKBACK_SECONDS: give a whole number of seconds, 1 or more (got "0")'],
    [{ RECONCILE_SWEEP_OVERLAP_SECONDS: "-5" }, 'RECONCILE_SWEEP_OVERLAP_SECONDS: give a whole number of seconds, 0 or more (got "-5")'],
    [{ STREAM_WATCH_INTERVAL_SECONDS: "1m" }, 'STREAM_WATCH_INTERVAL_SECONDS: give a whole number of seconds, 0 or more; 0 turns it off (got "1m")'],
    [{ PUBLIC_URL: "hooks" }, 'PUBLIC_URL: give the URL at which the tenant reaches this service, e.g. https://hooks.example.com (got "hooks")'],
    [{ WEBHOOK_AUTH: "foo" }, 'WEBHOOK_AUTH: must be one of basic, bearer, custom_header, none (got "foo")'],
    [{ LOG_LEVEL: "verbose" }, 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")'],
  ])("when %o, then the problem reads word for word", (env, message) => {
    expect(problemsOf(env)).toEqual([message]);
  });

  /** Settings that take any text as given: a word, -1 and 1.5 are values for them, so there is no problem to word. */
  const freeText = new Set(["HOST", "ADMIN_HOST", "DATA_DIR", "WEBHOOK_TOKEN", "WEBHOOK_HEADER_NAME", "WEBHOOK_HEADER_VALUE", "DEFAULT_STREAM_ID", "TENANT_DOMAIN", "MGMT_AUDIENCE", "MGMT_CLIENT_ID", "MGMT_CLIENT_SECRET", "ROUTES_FILE", "ADMIN_TOKEN"]);
  const oddValues = ["not-a-number", "-1", "1.5"];
  /** The problems loading this one setting reports; empty when it was taken. */
  const problemsFor = (key: string, value: string): string[] => {
    try {
      loadConfig({ [key]: value });
      return [];
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return error.problems;
    }
  };

  it.each(Object.keys(settings).filter((key) => !freeText.has(key)))("when %s is given a word, -1 or 1.5, then at least one is refused and no problem shows zod's own text", (key) => {
    const problems = oddValues.flatMap((value) => problemsFor(key, value));
    // Something to check first: a setting that takes all three is free text (add it to freeText above).
    expect(problems.length, `${key} took a word, -1 and 1.5 alike: if it is free text, list it in freeText`).toBeGreaterThan(0);
    for (const problem of problems) expect(problem).not.toMatch(/Invalid (input|option)|Too small|Too big|expected (number|int|boolean|one of)/);
  });

  it.each([...freeText])("when free-text %s is given a word, -1 or 1.5, then each is taken as it is", (key) => {
    expect(key in settings, `${key} is no setting any more: drop it from freeText`).toBe(true);
    for (const value of oddValues) expect(problemsFor(key, value)).toEqual([]);
  });
});

import { z } from "zod";
import "./our-words.js";
import { numberSchema } from "./number-schema.js";
import { redactUrlCredentials } from "../logging/redact-secrets.js";
import { isTenantEventType } from "../events/event-types.js";
import { parsePullStart, pullStartAccepted, startTime } from "../pull/pull-start.js";
import { isTenantEndpoint } from "../tenant/is-tenant-endpoint.js";
import { streamIdPattern } from "../tenant/stream-id.js";

/**
 * Every setting of Streamkeeper, read from the environment once, here and nowhere else.
 * Each key has its default and a one-line description; the README's settings table
 * is written from this list (`streamkeeper settings` prints it).
 */
const wholePort = "use a whole number from 0 to 65535";
/** LIVE_WINDOW_SECONDS's default: the live window of a route that sets none (delivery-queues.ts). */
export const defaultLiveWindowSeconds = 300;

/** A whole number of `unit` from `min` up, read from the environment; `note` says what a value means. */
const whole = (unit: string, min: number, note?: string) => numberSchema({ whole: true, min, unit, note, coerce: true });
const port = z.coerce.number({ error: wholePort }).int(wholePort).min(0, wholePort).max(65535, wholePort);
const optional = z.string().trim().min(1).optional();
/** A credential, used exactly as given: whitespace around it is refused, never trimmed (the tenant sends what it was given). */
const secret = z
  .string()
  .refine((value) => value.trim() === value, "has leading or trailing whitespace: secrets are used exactly as given; remove the whitespace (or, if it is really part of the secret, choose another)")
  .optional();
const url = z.url({ protocol: /^https?$/, error: "use an http:// or https:// URL" }).optional();
/** Where the tenant reaches this service: https, or http on a loopback address (the tenant's own rule, is-tenant-endpoint.ts). */
const publicUrl = z
  .url({ protocol: /^https?$/, error: "give the URL at which the tenant reaches this service, e.g. https://hooks.example.com" })
  // zod runs these checks even after the URL check failed: a value that is no URL at all has its message already.
  .refine((value) => !URL.canParse(value) || isTenantEndpoint(new URL(value)), "use https:// (http:// only on 127.0.0.1, localhost or [::1]): the tenant sends webhooks to https endpoints only")
  .refine((value) => !URL.canParse(value) || (!new URL(value).search && !new URL(value).hash), "give the URL without a query or fragment")
  .transform((value) => value.replace(/\/+$/, ""))
  .optional();
const streamIds = z
  .string()
  .transform((value) => value.split(",").map((id) => id.trim()).filter(Boolean))
  .pipe(z.array(z.string().regex(streamIdPattern, "give stream ids such as est_aD5AUDqZbHFcMoEx2LxAk9, separated by commas")).min(1, "give at least one stream id, or leave it unset"))
  .optional();

export const settings = {
  PORT: [port.default(8080), "public webhook ingress port"],
  HOST: [z.string().default("0.0.0.0"), "public webhook ingress address"],
  ADMIN_PORT: [port.default(9090), "metrics, admin API and dashboard port"],
  ADMIN_HOST: [z.string().default("127.0.0.1"), "admin address; keep it internal"],
  REDIS_URL: [
    z.string().trim().regex(/^(rediss?(\+cluster)?|redis\+unix|unix):\/\//, "use redis://host:port, rediss:// (TLS), redis+cluster://host:port[,host:port...] (Redis Cluster) or redis+unix:///path").optional(),
    "unset: start an embedded redis-server (from PATH) with its data under DATA_DIR, or reuse one already running there; redis+cluster://host:port[,host:port...] (rediss+cluster:// with TLS) for a Redis Cluster",
  ],
  REDIS_MIN_REPLICAS: [
    whole("replicas", 0, "0 does not wait for replicas").default(0),
    "above 0, a 202 waits until that many replicas acknowledged the write (Redis WAIT, at most 1 s), else 503 with Retry-After; not with Redis Cluster",
  ],
  DATA_DIR: [z.string().default("./.streamkeeper"), "embedded Redis data (append-only file on) and generated credentials"],
  QUEUE_PREFIX: [z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "use letters, digits, _ or - only").default("streamkeeper"), "prefix of every Redis key; each route queue, the reconcile queue, each ledger and version shard and the sweep state gets its own hash tag from it (docs/deploy.md)"],
  WEBHOOK_AUTH: [z.enum(["basic", "bearer", "custom_header", "none"]).default("basic"), "how the tenant authenticates: basic, bearer, custom_header or none (none only when set explicitly)"],
  WEBHOOK_USERNAME: [optional, "user name for basic; with WEBHOOK_PASSWORD also unset, credentials are generated into DATA_DIR"],
  WEBHOOK_PASSWORD: [secret, "password for basic"],
  WEBHOOK_TOKEN: [secret, "token for bearer"],
  WEBHOOK_HEADER_NAME: [z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "use a valid HTTP header name").optional(), "header name for custom_header"],
  WEBHOOK_HEADER_VALUE: [secret, "header value for custom_header"],
  WEBHOOK_PREVIOUS_PASSWORD: [secret, "basic: the old password, also accepted while set (with WEBHOOK_USERNAME), for a rotation with no 401s (docs/operating.md)"],
  WEBHOOK_PREVIOUS_TOKEN: [secret, "bearer: the old token, also accepted while set, for a rotation with no 401s"],
  WEBHOOK_PREVIOUS_HEADER_VALUE: [secret, "custom_header: the old header value, also accepted while set, for a rotation with no 401s"],
  WEBHOOK_MAX_BODY_BYTES: [whole("bytes", 1024).default(1_048_576), "larger bodies get 413"],
  WEBHOOK_REQUEST_TIMEOUT_MS: [whole("milliseconds", 100).default(30_000), "a webhook request whose headers and body are not complete by then is cut with 408, authenticated or not"],
  DEFAULT_STREAM_ID: [optional, "stream of events that name none (no path id, no a0stream); also the stream reconcile reads first"],
  TENANT_DOMAIN: [z.string().regex(/^[A-Za-z0-9.-]+(:\d+)?$/, "give a host name such as acme.us.auth0.com, without https://").optional(), "tenant host, e.g. acme.us.auth0.com"],
  MGMT_API_BASE_URL: [url, "management API root; default https://<TENANT_DOMAIN>/api/v2"],
  MGMT_TOKEN_URL: [url, "token endpoint; default https://<TENANT_DOMAIN>/oauth/token"],
  MGMT_AUDIENCE: [optional, "token audience; default https://<TENANT_DOMAIN>/api/v2/"],
  MGMT_CLIENT_ID: [optional, "client-credentials grant: client id"],
  MGMT_CLIENT_SECRET: [secret, "client-credentials grant: client secret"],
  ROUTES_FILE: [optional, "downstream routes (YAML or JSON)"],
  DOWNSTREAM_URL: [url, "shortcut: one route named `default` that receives every event"],
  ADMIN_TOKEN: [
    secret,
    "bearer token for /admin/* and the operator view's login; unset: the service generates one once into DATA_DIR/admin-token (mode 0600, never logged), and commands run with the same DATA_DIR whose shell sets no ADMIN_TOKEN read it there; set, it always wins",
  ],
  ADMIN_PREVIOUS_TOKEN: [secret, "the old ADMIN_TOKEN, also accepted while set, for a rotation with no 401s"],
  ADMIN_URL: [url, "where commands reach the running service's admin API (with ADMIN_TOKEN); default http://<ADMIN_HOST>:<ADMIN_PORT>"],
  DEDUPE_TTL_SECONDS: [
    whole("seconds", 3600, "an hour at least: the tenant retries a delivery for seconds to minutes, and those retries must count as duplicates").default(604_800),
    "how long an event id is remembered; dedupe rests on this alone, not on the delivered jobs (at least 3600, and not below RECONCILE_SWEEP_LOOKBACK_SECONDS while the sweep runs)",
  ],
  LEDGER_SHARDS: [numberSchema({ whole: true, min: 1, max: 1_000_000, unit: "shards", coerce: true }).default(1024), "id shards of the dedupe ledger, fixed in Redis by its first writer; about peak events per day / 100: fewer shards cost Redis CPU per lookup, more cost key overhead (docs/deploy.md)"],
  LOG_LEVEL: [z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), "pino level; secrets redacted"],
  LOG_FORMAT: [
    z.enum(["pretty", "json"], { error: "give pretty or json" }).optional(),
    "pretty: one readable line per entry with local time (the default when stdout is a terminal); json: JSON lines (the default otherwise); secrets redacted in both",
  ],
  LOG_REPEAT_INTERVAL_SECONDS: [numberSchema({ above: 0, unit: "seconds", example: "60", coerce: true }).default(60), "a failure that repeats (Redis down, wrong webhook credentials) is logged at once, then once per interval with its count"],
  SHUTDOWN_TIMEOUT_MS: [whole("milliseconds", 0).default(10_000), "how long shutdown waits for in-flight requests and deliveries"],
  DISPATCH_BACKOFF_BASE_MS: [whole("milliseconds", 1).default(1000), "first retry delay of a downstream delivery; doubles each attempt, with jitter"],
  DISPATCH_BACKOFF_MAX_MS: [whole("milliseconds", 1).default(3_600_000), "longest retry delay, also the clamp on a downstream Retry-After"],
  DISPATCH_RETRY_WINDOW_SECONDS: [whole("seconds", 1).default(259_200), "how long a delivery keeps being retried after its first failure before it becomes a dead letter (a route's maxAttemptsPerEvent may end it sooner)"],
  LIVE_WINDOW_SECONDS: [whole("seconds", 1).default(defaultLiveWindowSeconds), "an event whose time is more than this before its arrival is late: it waits in its route's late lane, behind live events (a route's liveWindowSeconds wins; docs/operating.md, Live and late lanes)"],
  TRANSFORM_TIMEOUT_MS: [whole("milliseconds", 1).default(100), "how long a route's transform may run for one event; one that runs past it (or fails) makes that delivery a dead letter naming the error, and the next event is delivered"],
  DISPATCH_CIRCUIT_FAILURES: [whole("failures", 0, "0 turns the circuit off").default(10), "consecutive failed deliveries after which a route stops sending and probes with one delivery at a time; 0 turns the circuit off"],
  DISPATCH_CIRCUIT_PROBE_MIN_MS: [whole("milliseconds", 10).default(5000), "first wait before an open circuit's probe; doubles after each failed probe"],
  DISPATCH_CIRCUIT_PROBE_MAX_MS: [whole("milliseconds", 10).default(30_000), "longest wait between two probes of an open circuit, so a recovered downstream is found within it"],
  DISPATCH_LOCK_DURATION_MS: [whole("milliseconds", 1000).default(30_000), "the lock of a delivery in flight; a crashed worker's delivery is retried by another worker between once and twice this after the crash (the lock expires, then BullMQ's stalled check, run at this same interval, finds it: 30-60 s by default)"],
  COMPLETED_JOB_RETENTION_SECONDS: [whole("seconds", 0).default(3600), "how long delivered jobs stay visible in the dashboard; any value down to 0 keeps dedupe (the ledger's, DEDUPE_TTL_SECONDS)"],
  COMPLETED_JOB_RETENTION_COUNT: [whole("jobs", 0).default(1000), "delivered jobs kept per route besides the age limit, so a burst cannot grow Redis with the arrival rate; any value down to 0 keeps dedupe"],
  RECONCILE_RATE_SHARE: [numberSchema({ noun: "fraction", above: 0, max: 1, example: "0.5", coerce: true }).default(0.5), "the part of the tenant's API bucket (X-RateLimit-Limit a second) that reconcile, the sweep, the stream watcher and connect may spend together, across every process; other clients of the tenant keep the rest (docs/operating.md, How the recovery pace works)"],
  RECONCILE_RATE_PER_SECOND: [numberSchema({ above: 0, unit: "calls per second", example: "10", note: "leave it unset for no cap", coerce: true }).optional(), "a further cap on tenant API calls per second, across every process; unset: no cap beyond RECONCILE_RATE_SHARE"],
  RECONCILE_RETRY_FOR_SECONDS: [whole("seconds", 1).default(7200), "how long a reconcile job whose calls fail (the tenant answers 5xx or not at all, Redis is away) is retried, waiting 1 s doubling to 60 s between attempts, before it ends as an error; the waiting `reconcile` command says so meanwhile"],
  PUBLIC_URL: [publicUrl, "the URL at which the tenant reaches this service (https, or http on loopback); selects the swept streams and is the default of `streams connect --public-url`"],
  RECONCILE_SWEEP_STREAMS: [streamIds, "comma-separated stream ids to sweep; unset: every stream whose webhook_endpoint starts with PUBLIC_URL"],
  RECONCILE_SWEEP_INTERVAL_SECONDS: [whole("seconds", 0, "0 turns the sweep off").default(300), "how often the worker lists each swept stream's failed deliveries and recovers them; 0 turns the sweep off"],
  RECONCILE_SWEEP_LOOKBACK_SECONDS: [whole("seconds", 1).default(86_400), "how far back the first sweep of a stream reads"],
  RECONCILE_SWEEP_OVERLAP_SECONDS: [whole("seconds", 0).default(600), "how far each sweep reads back before the end of the last window it finished, so a delivery that turns failed after its window was read (or a clock skew with the tenant) is still found"],
  RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS: [whole("seconds", 0, "0 turns it off").default(3600), "how often a sweep reads each stream's whole RECONCILE_SWEEP_LOOKBACK_SECONDS again rather than from its checkpoint, so a delivery that turns failed later than RECONCILE_SWEEP_OVERLAP_SECONDS after its event is still found (its list calls go at the same pace); 0 off"],
  STREAM_WATCH_INTERVAL_SECONDS: [whole("seconds", 0, "0 turns it off").default(60), "how often the worker reads the status of every swept stream; 0 off"],
  STREAM_AUTO_ENABLE: [z.stringbool({ error: "give true or false" }).default(false), "enable a swept stream found disabled again, as soon as this service is ready to store events"],
  PULL: [z.enum(["on", "off"], "give on or off").default("off"), "on: the worker role reads every event from the tenant's Events API (scope read:events) beside or instead of the push (docs/operating.md, Pulling events)"],
  PULL_EVENT_TYPES: [
    z
      .string()
      .transform((value) => value.split(",").map((type) => type.trim()).filter(Boolean))
      .pipe(z.array(z.string().refine(isTenantEventType, "give the tenant's event types, such as user.created, separated by commas")).min(1, "give at least one event type, or leave it unset"))
      .optional(),
    "comma-separated event types to pull; unset: every type",
  ],
  PULL_START: [z.string().refine((value) => parsePullStart(value) !== undefined, pullStartAccepted).default("now"), "where a service with no stored pull offset begins: now, a duration back such as 7d, or an ISO 8601 time (a first backfill), at most `DEDUPE_TTL_SECONDS` back"],
  PULL_OVERLAP_SECONDS: [whole("seconds", 0).default(300), "after an expired offset (410), reading resumes from when the last offset was kept (our clock, never an event's own time) less this; the ledger drops the repeats"],
  PULL_FAILOVER_SECONDS: [numberSchema({ above: 0, unit: "seconds", example: "10", coerce: true }).default(10), "one worker holds the pull connection; another takes over within this long of its death"],
  ARCHIVE: [z.enum(["on", "off"], { error: "give on or off" }).default("on"), "keep every stored event and its delivery outcomes in PostgreSQL for search, replay and erasure (docs/operating.md, The archive); off: none of it"],
  ARCHIVE_DATABASE_URL: [z.string().trim().regex(/^postgres(ql)?:\/\//, "use postgres://user:password@host:port/database").optional(), "the archive's PostgreSQL; unset: an embedded Postgres under DATA_DIR/postgres, shared by every process on that DATA_DIR like the embedded Redis"],
  ARCHIVE_RETENTION_DAYS: [whole("days", 1).default(30), "how long archived events and their outcomes are kept; whole days are dropped at once"],
  ARCHIVE_STATEMENT_TIMEOUT_MS: [whole("milliseconds", 100).default(5000), "a Postgres statement of the archive not answered by then fails (a hung or overloaded server): the writer says the archive is unavailable once and keeps events in the outbox; a search answers 503"],
  OTEL_EXPORTER_OTLP_ENDPOINT: [url, "send OpenTelemetry traces there; off when unset"],
} as const satisfies Record<string, readonly [z.ZodType, string]>;

type Settings = typeof settings;
export type Env = { [K in keyof Settings]: z.output<Settings[K][0]> };

/** `previous`: the old secret of a rotation (WEBHOOK_PREVIOUS_*), accepted beside the current one while set. */
export type WebhookAuth =
  | { method: "basic"; username: string; password: string; previous?: string }
  | { method: "basic"; generated: true }
  | { method: "bearer"; token: string; previous?: string }
  | { method: "custom_header"; headerName: string; headerValue: string; previous?: string }
  | { method: "none" };

export interface Tenant {
  apiBaseUrl: string;
  tokenUrl: string;
  audience: string;
  clientId?: string;
  clientSecret?: string;
}

export interface Config {
  env: Env;
  webhookAuth: WebhookAuth;
  /** Undefined when neither TENANT_DOMAIN nor the MGMT_* overrides are set. */
  tenant?: Tenant;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("; "));
    this.name = "ConfigError";
  }
}

const schema = z.object(Object.fromEntries(Object.entries(settings).map(([key, [type]]) => [key, type]))) as unknown as z.ZodType<Env>;

/** The settings `keys` of `source` (blank as unset), parsed; a ConfigError naming every bad value. */
function parseSettings<T>(parser: z.ZodType<T>, keys: readonly string[], source: Record<string, string | undefined>): T {
  const raw = Object.fromEntries(keys.map((key) => [key, source[key] === "" ? undefined : source[key]]));
  const parsed = parser.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message} (got ${shown(String(issue.path[0]), raw[String(issue.path[0])])})`),
    );
  }
  return parsed.data;
}

const clientKeys = ["ADMIN_URL", "ADMIN_HOST", "ADMIN_PORT", "ADMIN_TOKEN", "DATA_DIR"] as const;
/** What a command that only talks to the running service reads of its own environment. */
export type ClientEnv = Pick<Env, (typeof clientKeys)[number]>;
const clientSchema = z.object(Object.fromEntries(clientKeys.map((key) => [key, settings[key][0]]))) as unknown as z.ZodType<ClientEnv>;

/**
 * The settings a command needs to reach the running service, and only those: every other
 * setting is the service's (one truth), so a bad one in the command's shell is none of its business.
 * DATA_DIR is where the token the service generated is read when ADMIN_TOKEN is unset.
 */
export function loadClientConfig(source: Record<string, string | undefined> = process.env): ClientEnv {
  return parseSettings(clientSchema, clientKeys, source);
}

/** Parses the environment; throws a ConfigError naming every bad value and what to change. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  const env = parseSettings(schema, Object.keys(settings), source);
  const problems: string[] = [];
  const webhookAuth = webhookAuthOf(env, problems);
  const tenant = tenantOf(env, problems);
  dedupeProblems(env, problems);
  // WAIT counts from the connection that wrote; on a cluster that is a node connection
  // ioredis does not expose.
  if (env.REDIS_MIN_REPLICAS > 0 && env.REDIS_URL !== undefined && /^rediss?\+cluster:/.test(env.REDIS_URL)) {
    problems.push("REDIS_MIN_REPLICAS works with one Redis primary, not with Redis Cluster: set it to 0 or use a redis:// URL");
  }
  if (env.PULL === "on" && !(tenant?.clientId && tenant.clientSecret)) {
    problems.push(`PULL=on reads the tenant's Events API: set ${tenantSettings} (a client with read:events), or set PULL=off`);
  }
  const now = Date.now();
  const pullFrom = startTime(parsePullStart(env.PULL_START)!, now);
  if (env.PULL === "on" && pullFrom && pullFrom.getTime() < now - env.DEDUPE_TTL_SECONDS * 1000) {
    problems.push(
      `PULL_START (${env.PULL_START}) reaches further back than DEDUPE_TTL_SECONDS (${env.DEDUPE_TTL_SECONDS} s): ids older than that are forgotten, so events the push delivered then would be delivered again; give a later PULL_START, or a longer DEDUPE_TTL_SECONDS`,
    );
  }
  if (env.ADMIN_PREVIOUS_TOKEN !== undefined && env.ADMIN_TOKEN === undefined) problems.push("ADMIN_PREVIOUS_TOKEN needs ADMIN_TOKEN (the new token): set it, or unset ADMIN_PREVIOUS_TOKEN");
  if (problems.length > 0) throw new ConfigError(problems);
  return { env, webhookAuth, tenant };
}

/**
 * A refused value as the error shows it: never a secret setting's value, and a URL
 * without its user info (REDIS_URL, MGMT_* may carry a password; found by
 * test/integration/secrets-never-leak.test.ts).
 */
function shown(key: string, value: string | undefined): string {
  if (value !== undefined && /PASSWORD|TOKEN|SECRET|HEADER_VALUE/.test(key)) return '"[redacted]"';
  return JSON.stringify(value === undefined ? undefined : redactUrlCredentials(value));
}

function webhookAuthOf(env: Env, problems: string[]): WebhookAuth {
  const auth = currentWebhookAuth(env, problems);
  // The previous secret of a rotation belongs to the method it was the secret of.
  const previousOf = { basic: "WEBHOOK_PREVIOUS_PASSWORD", bearer: "WEBHOOK_PREVIOUS_TOKEN", custom_header: "WEBHOOK_PREVIOUS_HEADER_VALUE" } as const;
  for (const [method, name] of Object.entries(previousOf)) {
    if (env[name] !== undefined && env.WEBHOOK_AUTH !== method) problems.push(`${name} is for WEBHOOK_AUTH=${method}, but WEBHOOK_AUTH=${env.WEBHOOK_AUTH}: unset it, or set the WEBHOOK_AUTH it belongs to`);
  }
  if (auth.method === "none") return auth;
  const previous = env[previousOf[auth.method]];
  if (previous === undefined) return auth;
  if ("generated" in auth) {
    problems.push("WEBHOOK_PREVIOUS_PASSWORD needs WEBHOOK_USERNAME and WEBHOOK_PASSWORD (the new credentials): generated credentials are not rotated this way (docs/operating.md)");
    return auth;
  }
  return { ...auth, previous };
}

function currentWebhookAuth(env: Env, problems: string[]): WebhookAuth {
  const required = (name: keyof Env) => {
    if (env[name] === undefined) problems.push(`${name} is required when WEBHOOK_AUTH=${env.WEBHOOK_AUTH}`);
    return String(env[name]);
  };
  switch (env.WEBHOOK_AUTH) {
    case "basic":
      if (env.WEBHOOK_USERNAME === undefined && env.WEBHOOK_PASSWORD === undefined) return { method: "basic", generated: true };
      if (env.WEBHOOK_USERNAME?.includes(":")) problems.push("WEBHOOK_USERNAME must not contain ':' (basic authorization splits on it)");
      return { method: "basic", username: required("WEBHOOK_USERNAME"), password: required("WEBHOOK_PASSWORD") };
    case "bearer":
      return { method: "bearer", token: required("WEBHOOK_TOKEN") };
    case "custom_header":
      return { method: "custom_header", headerName: required("WEBHOOK_HEADER_NAME"), headerValue: required("WEBHOOK_HEADER_VALUE") };
    case "none":
      return { method: "none" };
  }
}

/**
 * Dedupe is the ledger's alone (event-store.ts): it holds an id for DEDUPE_TTL_SECONDS,
 * whatever becomes of the delivered jobs (a job kept longer holds no later arrival back:
 * queue/held-job-ids.ts). One setting could still undo it.
 */
function dedupeProblems(env: Env, problems: string[]) {
  // The first sweep recovers failures that old; the tenant may have failed a delivery we
  // stored (our 503 after a slow store), so its id must still be known then.
  if (env.RECONCILE_SWEEP_INTERVAL_SECONDS > 0 && env.DEDUPE_TTL_SECONDS < env.RECONCILE_SWEEP_LOOKBACK_SECONDS) {
    problems.push(
      `DEDUPE_TTL_SECONDS (${env.DEDUPE_TTL_SECONDS}) must be at least RECONCILE_SWEEP_LOOKBACK_SECONDS (${env.RECONCILE_SWEEP_LOOKBACK_SECONDS}) while the sweep runs: an event the sweep recovers after its id is forgotten would be delivered twice; raise DEDUPE_TTL_SECONDS, lower RECONCILE_SWEEP_LOOKBACK_SECONDS or set RECONCILE_SWEEP_INTERVAL_SECONDS=0`,
    );
  }
}

function tenantOf(env: Env, problems: string[]): Tenant | undefined {
  const domain = env.TENANT_DOMAIN;
  const apiBaseUrl = env.MGMT_API_BASE_URL ?? (domain && `https://${domain}/api/v2`);
  const tokenUrl = env.MGMT_TOKEN_URL ?? (domain && `https://${domain}/oauth/token`);
  const audience = env.MGMT_AUDIENCE ?? (domain ? `https://${domain}/api/v2/` : env.MGMT_API_BASE_URL && `${env.MGMT_API_BASE_URL.replace(/\/+$/, "")}/`);
  if (!apiBaseUrl && !tokenUrl) return undefined;
  if (!apiBaseUrl) problems.push("MGMT_API_BASE_URL or TENANT_DOMAIN is required when MGMT_TOKEN_URL is set");
  if (!tokenUrl) problems.push("MGMT_TOKEN_URL or TENANT_DOMAIN is required when MGMT_API_BASE_URL is set");
  if (!apiBaseUrl || !tokenUrl || !audience) return undefined;
  return { apiBaseUrl: apiBaseUrl.replace(/\/+$/, ""), tokenUrl, audience, clientId: env.MGMT_CLIENT_ID, clientSecret: env.MGMT_CLIENT_SECRET };
}

const tenantWhere = "TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL)";

/** The settings that reach the tenant's API, as every message and help text names them ("set ..."). */
export const tenantSettings = `${tenantWhere}, MGMT_CLIENT_ID, MGMT_CLIENT_SECRET`;

/** The tenant's API settings are complete: reconcile, the sweep and the stream watch can run. */
export function tenantConfigured(config: Pick<Config, "tenant">): boolean {
  return Boolean(config.tenant?.clientId && config.tenant.clientSecret);
}

/** Where the tenant's API is needed (streams, reconcile): the settings or a message naming what to set. */
export function requireTenant(config: Config): Required<Tenant> {
  const tenant = config.tenant;
  const missing = [!tenant && tenantWhere, !tenant?.clientId && "MGMT_CLIENT_ID", !tenant?.clientSecret && "MGMT_CLIENT_SECRET"].filter(Boolean);
  if (missing.length > 0) throw new ConfigError([`set ${missing.join(", ")} to reach the tenant's management API`]);
  return tenant as Required<Tenant>;
}

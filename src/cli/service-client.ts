import { adminTokenFile, readAdminTokenFile } from "../credentials/admin-token.js";
import type { ClientEnv, Env } from "../config/config.js";
import { dataDirProblem } from "../config/data-dir-problem.js";
import type { ServiceConfig } from "../service-config/service-config.js";
import { CliError } from "./cli-error.js";

/** ADMIN_URL, else the admin address the service binds by the same settings (a wildcard address reached on loopback). */
export function adminUrlOf(env: Pick<Env, "ADMIN_URL" | "ADMIN_HOST" | "ADMIN_PORT">): string {
  if (env.ADMIN_URL) return env.ADMIN_URL.replace(/\/+$/, "");
  const host = env.ADMIN_HOST === "0.0.0.0" || env.ADMIN_HOST === "" ? "127.0.0.1" : env.ADMIN_HOST === "::" ? "[::1]" : env.ADMIN_HOST.includes(":") ? `[${env.ADMIN_HOST}]` : env.ADMIN_HOST;
  return `http://${host}:${env.ADMIN_PORT}`;
}

export type ServiceAnswer =
  | { reachable: true; url: string; status: number; body: unknown }
  /** No service answered there; `why` is the network error, for the one line that says so. */
  | { reachable: false; url: string; why: string };

export interface RequestOptions {
  body?: unknown;
  /** @defaultValue 5000; `open` waits as long as the answer streams */
  timeoutMs?: number;
}

export type OpenAnswer =
  | { reachable: true; url: string; status: number; response: Response }
  | { reachable: false; url: string; why: string };

/**
 * The one way a command reaches the running service: its admin API at ADMIN_URL (else
 * ADMIN_HOST/ADMIN_PORT) with `Authorization: Bearer <ADMIN_TOKEN>`. Commands that act on
 * the service's behalf go through it and never read Redis or a configuration from their own
 * shell: only a live service answers (README.md#http-surfaces).
 */
export interface ServiceClient {
  url: string;
  /** The answer as it starts, its body still to read (a long answer streamed line by line), or `reachable: false` when nothing answers. */
  open(method: "GET" | "POST" | "DELETE", path: string, options?: RequestOptions): Promise<OpenAnswer>;
  /** Any answer (also 401, 404), or `reachable: false` when nothing answers. */
  ask(method: "GET" | "POST" | "DELETE", path: string, options?: RequestOptions): Promise<ServiceAnswer>;
  /** A 2xx answer's body; otherwise a CliError in one line: 1 when no service answers or it fails, 2 for a token or request to change. */
  call<T = unknown>(method: "GET" | "POST" | "DELETE", path: string, options?: RequestOptions): Promise<T>;
  /** GET /admin/config: the running service's routes, tenant and sweep settings. */
  config(): Promise<ServiceConfig>;
  /** A non-2xx answer as one line (refusal below), a refused token named by where this command took it. */
  refusal(answer: { url: string; status: number; body: unknown }): CliError;
}

/** The admin token a command sends: this shell's ADMIN_TOKEN, else the one the service generated in DATA_DIR (admin-token.ts). */
interface CommandToken {
  value?: string;
  from: "shell" | "file" | "none";
  file: string;
}

function commandToken(env: ClientEnv): CommandToken {
  const file = adminTokenFile(env.DATA_DIR);
  if (env.ADMIN_TOKEN !== undefined) return { value: env.ADMIN_TOKEN, from: "shell", file };
  try {
    const value = readAdminTokenFile(file);
    return { value, from: value === undefined ? "none" : "file", file };
  } catch (error) {
    return dataDirProblem(env.DATA_DIR, "read the admin token the service generated", "set ADMIN_TOKEN")(error as NodeJS.ErrnoException);
  }
}

export function createServiceClient(env: ClientEnv): ServiceClient {
  const url = adminUrlOf(env);
  const token = commandToken(env);
  const open: ServiceClient["open"] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { accept: "application/json, application/problem+json" };
    if (token.value) headers.authorization = `Bearer ${token.value}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    try {
      const response = await fetch(`${url}${path}`, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
      });
      return { reachable: true, url, status: response.status, response };
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (error as Error).name;
      return { reachable: false, url, why: why === "TimeoutError" ? "no answer in time" : why };
    }
  };
  const ask: ServiceClient["ask"] = async (method, path, options = {}) => {
    const opened = await open(method, path, { ...options, timeoutMs: options.timeoutMs ?? 5000 });
    if (!opened.reachable) return opened;
    const { response } = opened;
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: something else listens there; the caller shows the status.
    }
    return { reachable: true, url, status: response.status, body };
  };
  const call: ServiceClient["call"] = async <T>(method: "GET" | "POST" | "DELETE", path: string, options?: RequestOptions) => {
    const answer = await ask(method, path, options);
    if (!answer.reachable) throw noService(answer);
    if (answer.status >= 200 && answer.status < 300) return answer.body as T;
    throw refusal(answer, token);
  };
  return {
    url,
    open,
    ask,
    call,
    async config() {
      const body = await call<ServiceConfig>("GET", "/admin/config");
      if (!isServiceConfig(body)) throw new CliError(`the service at ${url} answered /admin/config without a configuration: is ADMIN_URL a Streamkeeper admin address of this version?`);
      return body;
    },
    refusal: (answer) => refusal(answer, token),
  };
}

/** "no service answers at <url> (...)": exit 1, one line. */
export function noService(answer: { url: string; why: string }): CliError {
  return new CliError(`no service answers at ${answer.url} (${answer.why}): start it with \`streamkeeper start\`, or set ADMIN_URL to where it runs`, 1);
}

/** A non-2xx answer as one line: a token or a request to change exits 2, the service failing exits 1. */
function refusal(answer: { url: string; status: number; body: unknown }, token: CommandToken): CliError {
  const detail = problemDetail(answer);
  if (answer.status === 401) return new CliError(tokenRefused(answer.url, token), 2);
  if (answer.status === 403) return new CliError(`the service at ${answer.url} has its admin API off (a version before generated tokens): set ADMIN_TOKEN for the service and in this shell`, 2);
  if (answer.status === 404 && typeof (answer.body as { detail?: unknown } | undefined)?.detail !== "string") {
    return new CliError(`the service at ${answer.url} has no such endpoint (status 404): is ADMIN_URL a Streamkeeper admin address of this version?`, 1);
  }
  return new CliError(detail, answer.status >= 400 && answer.status < 500 && answer.status !== 408 && answer.status !== 429 ? 2 : 1);
}

/** A 401 in our words: what to check, by where the token came from (never the service's API text). */
function tokenRefused(url: string, token: CommandToken): string {
  switch (token.from) {
    case "shell":
      return `the service at ${url} refused this shell's ADMIN_TOKEN: set ADMIN_TOKEN to the service's admin token, or unset it to use the one the service generated (DATA_DIR/admin-token) with its DATA_DIR`;
    case "file":
      return `the service at ${url} refused the admin token in ${token.file}: run the command with the service's DATA_DIR, or set ADMIN_TOKEN to the service's admin token`;
    case "none":
      return `no admin token here: the admin API needs the service started once on this DATA_DIR (it writes ${token.file}), or ADMIN_TOKEN set to the service's`;
  }
}

/** The `detail` of a problem+json answer, else the status. */
export function problemDetail(answer: { status: number; body: unknown }): string {
  const detail = (answer.body as { detail?: unknown } | undefined)?.detail;
  return typeof detail === "string" ? detail : `the service answered status ${answer.status}`;
}

function isServiceConfig(value: unknown): value is ServiceConfig {
  const candidate = value as Partial<ServiceConfig> | undefined;
  return typeof candidate === "object" && candidate !== null && Array.isArray(candidate.routes) && typeof candidate.tenantConfigured === "boolean" && typeof candidate.sweep === "object";
}

import type { Env } from "../config.js";

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

/**
 * One call to the running service's admin API: JSON in and out, `Authorization: Bearer
 * <ADMIN_TOKEN>` when the shell has it. A service that does not answer at all is
 * `reachable: false`; any HTTP answer (also 401, 404) is the service's.
 */
export async function askService(
  env: Pick<Env, "ADMIN_URL" | "ADMIN_HOST" | "ADMIN_PORT" | "ADMIN_TOKEN">,
  method: "GET" | "POST" | "DELETE",
  path: string,
  options: { body?: unknown; timeoutMs?: number } = {},
): Promise<ServiceAnswer> {
  const url = adminUrlOf(env);
  const headers: Record<string, string> = { accept: "application/json, application/problem+json" };
  if (env.ADMIN_TOKEN) headers.authorization = `Bearer ${env.ADMIN_TOKEN}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(`${url}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    return { reachable: false, url, why: cause === "TimeoutError" ? "no answer in time" : cause };
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: something else listens there; the caller shows the status.
  }
  return { reachable: true, url, status: response.status, body };
}

/** The `detail` of a problem+json answer, else the status. */
export function problemDetail(answer: { status: number; body: unknown }): string {
  const detail = (answer.body as { detail?: unknown } | undefined)?.detail;
  return typeof detail === "string" ? detail : `status ${answer.status}`;
}

import type { ClientEnv } from "../config.js";
import { createServiceClient, problemDetail } from "./service-client.js";
import { CliError } from "./cli-error.js";

/**
 * One call of an archive command (`events`, `replay`) to the running service's admin API:
 * the answer's body when it is a success; otherwise a CliError in one line: no service
 * answers (exit 1), the request needs changing (a 400: exit 2), `notFound` for a 404 of what
 * the path names, or what the service said.
 */
export async function askArchive(env: ClientEnv, method: "GET" | "POST" | "DELETE", path: string, body?: unknown, notFound?: string): Promise<unknown> {
  const answer = await createServiceClient(env).ask(method, path, { body, timeoutMs: 30_000 });
  if (!answer.reachable) {
    throw new CliError(`no Streamkeeper service answers at ${answer.url} (${answer.why}): start it (streamkeeper start), or set ADMIN_URL to where it runs`);
  }
  if (answer.status >= 200 && answer.status < 300) return answer.body;
  if (answer.status === 401 || answer.status === 403) throw new CliError(`${problemDetail(answer)} (set ADMIN_TOKEN to the service's)`, 2);
  const noSuchRoute = answer.status === 404 && /^no route for /.test(problemDetail(answer));
  if (answer.status === 404 && notFound !== undefined && !noSuchRoute) throw new CliError(notFound);
  if (noSuchRoute && /^\/admin\/(events\?|replays)/.test(path)) throw new CliError("the service answers, but without the archive (ARCHIVE=off, or a version without it)");
  throw new CliError(problemDetail(answer), answer.status === 400 ? 2 : 1);
}

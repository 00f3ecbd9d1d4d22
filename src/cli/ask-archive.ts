import type { ClientEnv } from "../config/config.js";
import { createServiceClient, noService, problemDetail } from "./service-client.js";
import { CliError } from "./cli-error.js";

/**
 * One call of an archive command (`events`, `replay`) to the running service's admin API:
 * the answer's body when it is a success; otherwise a CliError in one line: no service
 * answers (exit 1), the request needs changing (a 400: exit 2), `notFound` for a 404 of what
 * the path names, or what the service said.
 */
export async function askArchive(env: ClientEnv, method: "GET" | "POST" | "DELETE", path: string, body?: unknown, notFound?: string): Promise<unknown> {
  const service = createServiceClient(env);
  const answer = await service.ask(method, path, { body, timeoutMs: 30_000 });
  if (!answer.reachable) throw noService(answer);
  if (answer.status >= 200 && answer.status < 300) return answer.body;
  if (answer.status === 401 || answer.status === 403) throw service.refusal(answer);
  const noSuchRoute = answer.status === 404 && /^no route for /.test(problemDetail(answer));
  if (answer.status === 404 && notFound !== undefined && !noSuchRoute) throw new CliError(notFound);
  if (noSuchRoute && /^\/admin\/(events\?|replays)/.test(path)) throw new CliError("the service answers, but without the archive (ARCHIVE=off, or a version without it)");
  if (answer.status !== 400) throw new CliError(problemDetail(answer));
  // The API names its parameter ("outcome: must be one of ..."); the command's user typed the flag of the same name.
  throw new CliError(problemDetail(answer).replace(/^([a-z]+): /, "--$1: "), 2);
}

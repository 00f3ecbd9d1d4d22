import type { Command } from "commander";
import { loadClientConfig } from "../config/config.js";
import { CliError } from "./cli-error.js";
import { formatTable } from "./format-table.js";
import { parseCliTime } from "./parse-cli-time.js";
import { readFileOption } from "./read-file-option.js";
import { runAction } from "./run-action.js";
import { createServiceClient } from "./service-client.js";

interface ListedRoute {
  name: string;
  state: "configured" | "removed";
  match?: string[];
  url?: string;
  filter?: Record<string, unknown>;
  testEvents?: "deliver" | "drop";
  transform?: string;
  waiting: number;
  /** the queued part of `waiting` by lane: live, and late (behind live: late events, recoveries, replays) */
  lanes?: { live: number; late: number };
  deadLetters?: number;
}

/**
 * `streamkeeper routes list|try|move|drop` (docs/operating.md#removing-or-renaming-a-route, docs/routes.md), through the running
 * service's admin API: a route renamed or removed keeps its waiting events until they are
 * moved to a configured route or dropped.
 */
export function registerRoutesCommand(program: Command): void {
  const routes = program.command("routes").description("the running service's routes, and routes removed with events still waiting (through its admin API: ADMIN_URL, ADMIN_TOKEN)");

  routes
    .command("list")
    .description("every configured route, and every removed one with events waiting: NAME, STATE (configured or removed), WAITING (queued, retrying or in flight), LIVE and LATE (the queued ones by lane), DEAD LETTERS, MATCH, URL, SHAPE (filter, testEvents drop, transform)")
    .option("--json", "print one JSON array")
    .action(
      runAction(async (options: { json?: boolean }) => {
        const { routes: listed } = await createServiceClient(loadClientConfig()).call<{ routes: ListedRoute[] }>("GET", "/admin/routes", { timeoutMs: 60_000 });
        if (options.json) return void process.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
        process.stdout.write(
          formatTable(
            ["NAME", "STATE", "WAITING", "LIVE", "LATE", "DEAD LETTERS", "MATCH", "URL", "SHAPE"],
            listed.map((route) => [route.name, route.state, String(route.waiting), String(route.lanes?.live ?? ""), String(route.lanes?.late ?? ""), route.deadLetters === undefined ? "" : String(route.deadLetters), route.match?.join(",") ?? "", route.url ?? "", shapeOf(route)]),
          ),
        );
        const removed = listed.filter((route) => route.state === "removed");
        if (removed.length > 0) process.stderr.write(`note: removed route(s) ${removed.map((route) => route.name).join(", ")} still hold events: \`streamkeeper routes move <old> <route>\` or \`streamkeeper routes drop <old> --yes\`\n`);
      }),
    );

  routes
    .command("try <route>")
    .description("what the route would do with one event (match, filter, testEvents, deliver, and the body it would send), sending nothing")
    .option("--event <event-id>", "an archived event")
    .option("--file <path>", "a CloudEvent as JSON (- for stdin)")
    .option("--json", "print the answer as one JSON object")
    .action(runAction(tryRoute));

  routes
    .command("move <old-route> <route>")
    .description("hand every event waiting for a removed route (queued, retrying, dead letters) to a configured route, delivered there once with fresh attempts")
    .action(
      runAction(async (old: string, to: string) => {
        const answer = await createServiceClient(loadClientConfig()).call<{ moved: number }>("POST", `/admin/routes/${encodeURIComponent(old)}/move`, { body: { to }, timeoutMs: 30 * 60_000 });
        process.stdout.write(`moved ${answer.moved} event(s) from ${old} to ${to}\n`);
      }),
    );

  routes
    .command("drop <old-route>")
    .description("delete every event waiting for a removed route; prints how many")
    .option("--yes", "confirm: the events are deleted for good")
    .action(
      runAction(async (old: string, options: { yes?: boolean }) => {
        if (!options.yes) throw new CliError(`dropping deletes every event waiting for ${old} for good: add --yes to confirm (or move them: streamkeeper routes move ${old} <route>)`, 2);
        const answer = await createServiceClient(loadClientConfig()).call<{ dropped: number }>("DELETE", `/admin/routes/${encodeURIComponent(old)}`, { timeoutMs: 30 * 60_000 });
        process.stdout.write(`dropped ${answer.dropped} event(s) of ${old}\n`);
      }),
    );

  routes
    .command("park <route>")
    .description("take every event waiting for the route (queued or retrying, not in flight) whose time is older than --older-than off its queue, into the archive as parked; `replay --route <route> --outcome parked` sends them later")
    .option("--older-than <time>", "events whose time is before this: ISO 8601, or a duration back from now (30m, 2h, 7d); default: the route's live window (liveWindowSeconds)")
    .option("--json", "print the answer as JSON")
    .action(
      runAction(async (route: string, options: { olderThan?: string; json?: boolean }) => {
        const body = options.olderThan ? { olderThan: parseCliTime("--older-than", options.olderThan) } : {};
        const answer = await createServiceClient(loadClientConfig()).call<{ parked: number; route: string; olderThan: string; since?: string }>("POST", `/admin/routes/${encodeURIComponent(route)}/park`, { body, timeoutMs: 30 * 60_000 });
        if (options.json) return void process.stdout.write(`${JSON.stringify(answer)}\n`);
        process.stdout.write(`parked ${answer.parked} event(s) of ${route} older than ${answer.olderThan}\n`);
        if (answer.since) process.stdout.write(`send them with: streamkeeper replay --route ${route} --outcome parked --since ${answer.since}\n`);
      }),
    );
}

/** The route's filter, testEvents and transform in one column: `filter {...}; drop tests; transform ...`. */
function shapeOf(route: ListedRoute): string {
  return [route.filter && `filter ${JSON.stringify(route.filter)}`, route.testEvents === "drop" && "drop tests", route.transform && `transform ${route.transform.replace(/\s+/g, " ")}`].filter(Boolean).join("; ");
}

interface TryAnswer {
  match: boolean;
  filter: boolean | null;
  testEvents: boolean;
  deliver: boolean;
  body: unknown;
  error?: string;
}

/** `routes try <route> (--event <id> | --file <path>|-) [--json]`. */
async function tryRoute(route: string, options: { event?: string; file?: string; json?: boolean }): Promise<void> {
  if ((options.event === undefined) === (options.file === undefined)) throw new CliError("give --event <event-id> (an archived event) or --file <path> (a CloudEvent as JSON, - for stdin), one of them", 2);
  const body = options.event !== undefined ? { eventId: options.event } : { event: parseEventFile(await readFileOption(options.file!), options.file!) };
  const answer = await createServiceClient(loadClientConfig()).call<TryAnswer>("POST", `/admin/routes/${encodeURIComponent(route)}/try`, { body, timeoutMs: 60_000 });
  if (options.json) return void process.stdout.write(`${JSON.stringify(answer)}\n`);
  const step = (passes: boolean | null) => (passes === null ? "none" : passes ? "yes" : "no");
  const lines = [`match       ${step(answer.match)}`, `filter      ${step(answer.filter)}`, `testEvents  ${step(answer.testEvents)}`, `deliver     ${step(answer.deliver)}`];
  if (answer.error) lines.push(`error       ${answer.error}`);
  if (answer.body !== null) lines.push(`body        ${JSON.stringify(answer.body, null, 2).replaceAll("\n", "\n            ")}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

function parseEventFile(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`--file ${path}: not JSON (${(error as Error).message}); give one CloudEvent as a JSON object`, 2);
  }
}

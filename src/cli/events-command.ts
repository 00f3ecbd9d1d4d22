import type { Command } from "commander";
import { loadClientConfig } from "../config/config.js";
import { askArchive } from "./ask-archive.js";
import { CliError } from "./cli-error.js";
import { parseCliTime } from "./parse-cli-time.js";
import { runAction } from "./run-action.js";
import { showEvent } from "./show-event.js";

interface SearchOptions {
  id?: string;
  type?: string;
  entity?: string;
  stream?: string;
  since?: string;
  until?: string;
  route?: string;
  outcome?: string;
  limit: string;
  json?: boolean;
}

interface Found {
  id: string;
  time: string;
  type: string;
  entity?: string;
  origin: string;
  erased: boolean;
  outcomes: Record<string, string>;
}

/** `streamkeeper events search|show|forget` (README.md#the-archive-search-timelines-replay-erasure), through the running service's admin API. */
export function registerEventsCommand(program: Command): void {
  const events = program.command("events").description("the archive: search stored events, show one event's timeline, erase an entity's payloads");

  events
    .command("search")
    .description("archived events, newest first: one line each (id, time, type, entity, origin, outcome per route)")
    .option("--id <event-id>", "one event")
    .option("--type <type>", "an event type, or a pattern such as user.*")
    .option("--entity <id>", "a user, organization or group id")
    .option("--stream <stream-id>", "one event stream")
    .option("--since <time>", "arrived at or after: a duration back from now (30m, 2h, 7d), a date (its midnight UTC) or an ISO 8601 time")
    .option("--until <time>", "arrived before: a duration back from now, a date or an ISO 8601 time")
    .option("--route <name>", "events queued for or replayed to this route")
    .option("--outcome <outcome>", "delivered, dead_letter, stale, filtered, retry, moved, dropped, parked, pending or unrouted (with --route: on that route)")
    .option("--limit <n>", "at most this many events", "50")
    .option("--json", "one JSON object per line")
    .action(
      runAction(async (options: SearchOptions) => {
        const env = loadClientConfig();
        const limit = Number(options.limit);
        if (!Number.isInteger(limit) || limit < 1) throw new CliError(`--limit ${JSON.stringify(options.limit)}: give a whole number from 1`, 2);
        const query = new URLSearchParams();
        for (const key of ["id", "type", "entity", "stream", "route", "outcome"] as const) if (options[key]) query.set(key, options[key]);
        if (options.since) query.set("since", parseCliTime("--since", options.since));
        if (options.until) query.set("until", parseCliTime("--until", options.until));
        let left = limit;
        let after: string | undefined;
        let shown = 0;
        do {
          const page = new URLSearchParams(query);
          page.set("limit", String(Math.min(left, 1000)));
          if (after) page.set("after", after);
          const answer = (await askArchive(env, "GET", `/admin/events?${page}`)) as { events: Found[]; next?: string };
          for (const event of answer.events) process.stdout.write(options.json ? `${JSON.stringify(event)}\n` : `${line(event)}\n`);
          shown += answer.events.length;
          left -= answer.events.length;
          after = answer.next;
        } while (after && left > 0);
        if (shown === 0 && !options.json) process.stdout.write("no archived event matches\n");
      }),
    );

  events
    .command("show <event-id>")
    .description("one event's timeline: how it arrived, then per route its outcome and each delivery attempt")
    .option("--json", "the service's answer (GET /admin/events/:eventId) as one JSON line")
    .action(runAction((eventId: string, options: { json?: boolean }) => showEvent(loadClientConfig(), eventId, options.json ?? false)));

  events
    .command("forget")
    .description("erase an entity's payloads from the archive (an erasure request), keeping ids, types, times and outcomes")
    .requiredOption("--entity <id>", "the user, organization or group id")
    .option("--json", 'print the answer as one JSON line: {"entity","erased","jobs"}')
    .action(
      runAction(async (options: { entity: string; json?: boolean }) => {
        if (options.entity.trim() === "") throw new CliError("--entity is empty: give the id of the user, organization or group whose payloads to erase", 2);
        const env = loadClientConfig();
        const answer = (await askArchive(env, "DELETE", `/admin/entities/${encodeURIComponent(options.entity)}`)) as { entity: string; erased: number; jobs?: number };
        if (options.json) return void process.stdout.write(`${JSON.stringify({ entity: answer.entity, erased: answer.erased, jobs: answer.jobs ?? 0 })}\n`);
        const jobs = answer.jobs ? `, and removed ${answer.jobs} kept delivery job${answer.jobs === 1 ? "" : "s"} holding them from Redis` : "";
        process.stdout.write(`erased the payloads of ${answer.erased} archived event${answer.erased === 1 ? "" : "s"} of ${options.entity}${jobs}; their ids, types, times and outcomes are kept\n`);
      }),
    );
}

function line(event: Found): string {
  const outcomes = Object.entries(event.outcomes).map(([route, outcome]) => (route ? `${route}=${outcome}` : outcome)).join(",");
  return [event.id, event.time, event.type, event.entity ?? "-", event.origin, outcomes || "-", ...(event.erased ? ["(erased)"] : [])].join("  ");
}

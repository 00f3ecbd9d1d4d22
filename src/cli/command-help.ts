import type { Command } from "commander";
import { tenantSettings } from "../config/config.js";

interface Help {
  settings: string;
  outcomes: string;
  exitCodes: string;
}

const tenant = `${tenantSettings} (MGMT_AUDIENCE when the API's audience differs)`;
const service = "ADMIN_URL (else ADMIN_HOST/ADMIN_PORT), ADMIN_TOKEN (else the one the service generated in DATA_DIR/admin-token): the running service's admin API, never Redis";
const archiveSettings = "the running service's archive, reached at ADMIN_URL (else ADMIN_HOST/ADMIN_PORT) with its ADMIN_TOKEN (else the one it generated in DATA_DIR/admin-token)";
const noService = "1 no service answers (one line says so) or it failed";
const usage = "2 bad usage or settings";

/**
 * What each command's --help says after its options: the settings it reads, what it
 * prints, its exit codes (README.md#commands: 0 success, 1 the operation failed, 2 bad usage or
 * configuration). Kept here, by command path, so the commands' own modules stay about what they do.
 */
const helps: Record<string, Help> = {
  start: {
    settings: "every setting (streamkeeper settings lists them)",
    outcomes: "log lines on stdout at LOG_LEVEL (LOG_FORMAT: readable lines on a terminal, JSON lines otherwise); runs until SIGTERM, SIGINT or SIGHUP",
    exitCodes: `0 stopped cleanly; 1 failed at start; ${usage} (every bad value named)`,
  },
  reconcile: {
    settings: `${service}; the service reconciles with its own routes, tenant settings and pace (its RECONCILE_RATE_SHARE, RECONCILE_RATE_PER_SECOND). With --since: the running service reads the window with its own settings (DEDUPE_TTL_SECONDS bounds how far back, except --dry-run)`,
    outcomes:
      "<event-id> recovered|already_received|not_failed|no_payload|not_found|error: <reason> (with --json one object per line); with --no-wait <event-id> queued <job-id>; with --since the same per failed delivery of the window, and with --dry-run <event-id> would_recover|already_received|no_payload (with --json in \"outcome\"), then on stderr how many streams and list calls were read",
    exitCodes: `0 every id recovered or already there (--since: the window read to its end); 1 an id not recovered, or the window not read to its end, or no service answering; ${usage} (also the service's ADMIN_TOKEN refused, a service without tenant settings, a window the service refuses)`,
  },
  "dead-letters list": {
    settings: service,
    outcomes: "a table: route, job id, event id, type, attempts, failed reason, failed at (or one JSON array with --json)",
    exitCodes: `0 listed; ${noService}; ${usage} (ADMIN_TOKEN refused)`,
  },
  "dead-letters replay": {
    settings: service,
    outcomes: "replayed <route>/<job-id>, one line each",
    exitCodes: `0 replayed; 1 an id is no dead letter (nothing replayed); ${noService}; ${usage} (ADMIN_TOKEN refused)`,
  },
  "routes list": {
    settings: service,
    outcomes: "a table: name, state (configured or removed), waiting, live and late (the queued ones by lane), dead letters, match, url, shape (filter, drop tests, transform) (or one JSON array with --json: lanes {live, late}, filter, testEvents, transform)",
    exitCodes: `0 listed; ${noService}; ${usage} (ADMIN_TOKEN refused)`,
  },
  "routes try": {
    settings: `${service}; the service tries its own routes (and its TRANSFORM_TIMEOUT_MS), reading --event from its archive`,
    outcomes: "match, filter, testEvents, deliver (yes, no, or none for a filter the route lacks), then the error a transform would end in and the body it would send (with --json one object: match, filter, testEvents, deliver, body, error); nothing is sent",
    exitCodes: `0 tried, whatever the route would do; ${noService}; ${usage} (an unknown route, an event not archived or not a CloudEvent, a file that is not JSON, ADMIN_TOKEN refused)`,
  },
  "routes move": {
    settings: service,
    outcomes: "moved <n> event(s) from <old-route> to <route>",
    exitCodes: `0 moved; ${noService}; ${usage} (a configured <old-route>, an unknown <route>, ADMIN_TOKEN refused)`,
  },
  "routes drop": {
    settings: service,
    outcomes: "dropped <n> event(s) of <old-route>",
    exitCodes: `0 dropped; ${noService}; ${usage} (no --yes, a configured route, ADMIN_TOKEN refused)`,
  },
  "routes park": {
    settings: service,
    outcomes: "parked <n> event(s) of <route> older than <time>, then the replay command that sends them (or one JSON object with --json: parked, route, olderThan, since: the earliest arrival among them)",
    exitCodes: `0 parked (none is 0 too); ${noService}; ${usage} (an unknown route, the archive off on the service (ARCHIVE=off), a bad --older-than, ADMIN_TOKEN refused)`,
  },
  "streams list": {
    settings: `${tenant}; for SWEPT, ${service}`,
    outcomes:
      "a table: id, name, status, swept (yes, or no and the setting behind it), subscriptions, endpoint (or one JSON array with --json, each stream with swept: true|false and, when false, whyNotSwept: not_named|points_elsewhere|no_tenant|no_sweep|sweep_off, or swept: null and whyNotSwept: no_service|no_token)",
    exitCodes: `0 listed (also with no service answering or the admin token refused: SWEPT unknown, said once on stderr); 1 the tenant refused or failed; ${usage}`,
  },
  "streams update": {
    settings: tenant,
    outcomes: "updated <stream-id> and the stream (or the stream as JSON with --json); secrets never printed",
    exitCodes: `0 updated; 1 the tenant refused or failed; ${usage}`,
  },
  "streams connect": {
    settings: `ADMIN_URL, ADMIN_TOKEN (the running service does it with its own credentials); with no service answering: PUBLIC_URL, WEBHOOK_AUTH and every WEBHOOK_* it needs, ${tenant}`,
    outcomes: "stream <id> now delivers to <url> with <method> authorization",
    exitCodes: `0 connected; 1 the tenant refused or failed; ${usage} (no service and no WEBHOOK_* credentials, no public URL)`,
  },
  "token-exchange-profiles delete": {
    settings: tenant,
    outcomes: "deleted token exchange profile <id>",
    exitCodes: `0 deleted or already gone; 1 the tenant refused or failed; ${usage}`,
  },
  emulator: {
    settings: "EMULATOR_PORT, EMULATOR_CLIENT_ID, EMULATOR_CLIENT_SECRET, EMULATOR_TIME_SCALE, EMULATOR_RATE_LIMIT, EMULATOR_RATE_LIMIT_MODE, EMULATOR_AUTO_DISABLE_AFTER",
    outcomes: "emulator listening on http://127.0.0.1:<port>; runs until SIGINT or SIGTERM",
    exitCodes: `0 stopped; ${usage} (also the port in use)`,
  },
  demo: {
    settings: "REDIS_URL (else a throwaway redis-server)",
    outcomes: "the story, one line per step",
    exitCodes: "0 the event was recovered; 1 it was not",
  },
  "events search": {
    settings: archiveSettings,
    outcomes: "one line per event, newest first: id, arrival time, type, entity, origin, route=outcome per route (or one JSON object per line with --json)",
    exitCodes: `0 searched (also when nothing matches); 1 no service answering, or its archive unavailable; ${usage} (a bad date or filter)`,
  },
  "events show": {
    settings: archiveSettings,
    outcomes: "the event's arrival, then per route its outcome and each attempt (time, status or error), one line each (or the service's object as one JSON line with --json)",
    exitCodes: `0 shown; 1 the service knows no such event, no service answering, or its archive unavailable; ${usage}`,
  },
  "events forget": {
    settings: archiveSettings,
    outcomes: "erased the payloads of <n> archived events of <id>",
    exitCodes: `0 erased (also 0 events); 1 no service answering, or its archive unavailable; ${usage}`,
  },
  replay: {
    settings: `${archiveSettings}, and its routes`,
    outcomes: "progress on a TTY, then replay <id> done|cancelled|failed: matched, sent, delivered, failed, and how many erased events were skipped; --dry-run the count; --no-wait the replay id; --json one object",
    exitCodes: `0 every sent event delivered; 1 a delivery failed, the replay was cancelled or failed, another replay runs on the route, or no service answering; ${usage} (an unknown route, naming the routes; a window older than the archive keeps; bad dates)`,
  },
  "replay list": {
    settings: service,
    outcomes: "a table of every replay, newest first, whoever started it: replay id, route, state, matched, sent, delivered, failed, started (with --json one object per line)",
    exitCodes: `0 listed; ${noService} (or runs without the archive); ${usage} (ADMIN_TOKEN refused)`,
  },
  "replay status": {
    settings: service,
    outcomes: "replay <id> to <route> <state>: matched, sent, delivered, failed (with --json one object)",
    exitCodes: `0 shown; 1 no replay has that id (replay list shows them), no service answers (one line says so) or it failed; ${usage} (ADMIN_TOKEN refused)`,
  },
  "replay cancel": {
    settings: service,
    outcomes: "the replay's line once cancelled (what it queued already is still delivered; with --json one object)",
    exitCodes: `0 cancelled; 1 no replay has that id, it ended already, no service answers (one line says so) or it failed; ${usage} (ADMIN_TOKEN refused)`,
  },
  settings: {
    settings: "none",
    outcomes: "every setting with its default and meaning, as a Markdown table",
    exitCodes: "0",
  },
};

/** Appends each command's settings, outcomes and exit codes to its --help. */
export function addCommandHelp(program: Command): void {
  const visit = (command: Command, path: string[]) => {
    const help = helps[path.join(" ")];
    if (help) {
      command.addHelpText(
        "after",
        ["", `Settings read: ${help.settings}`, `Prints: ${help.outcomes}`, `Exit codes: ${help.exitCodes}`, "Log lines: none, unless --verbose (then at LOG_LEVEL, on stderr)"].join("\n"),
      );
    }
    for (const sub of command.commands) visit(sub, [...path, sub.name()]);
  };
  for (const command of program.commands) visit(command, [command.name()]);
}

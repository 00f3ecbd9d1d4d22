import type { Command } from "commander";
import { loadClientConfig } from "../config/config.js";
import { askArchive } from "./ask-archive.js";
import { parseCliTime } from "./parse-cli-time.js";
import { CliError } from "./cli-error.js";
import { registerReplayFollowCommands, type ReplayStatus } from "./replay-follow-commands.js";
import { runAction } from "./run-action.js";

interface ReplayOptions {
  route?: string;
  since?: string;
  until?: string;
  type?: string;
  entity?: string;
  stream?: string;
  outcome?: string;
  rate?: string;
  dryRun?: boolean;
  wait: boolean;
  json?: boolean;
}

/** A replay's wait for the archive this long is said (without a terminal's progress line): the archive's own margin is 5 s. */
const waitWorthSayingMs = 15_000;

/** `streamkeeper replay` (README.md#the-archive-search-timelines-replay-erasure): starts a replay on the running service and follows it. */
export function registerReplayCommand(program: Command): void {
  const replay = program
    .command("replay")
    .description("send archived events again to a route (also one added since: a backfill), below live events")
    .option("--route <name>", "the route to send them to (required)")
    .option("--since <time>", "arrived at or after (required): a duration back from now (30m, 2h, 7d), a date (its midnight UTC) or an ISO 8601 time")
    .option("--until <time>", "arrived before (default: now)")
    .option("--type <type>", "an event type, or a pattern such as user.*")
    .option("--entity <id>", "one user, organization or group")
    .option("--stream <stream-id>", "one event stream")
    .option("--outcome <outcome>", "only events with this outcome on the route, as events search takes it (parked: what `routes park` took off its queue)")
    .option("--rate <n>", "events queued per second at most")
    .option("--dry-run", "print how many events match; send nothing")
    .option("--no-wait", "start it and print its id; do not follow it")
    .option("--json", "print the result as JSON")
    .action(
      runAction(async (options: ReplayOptions) => {
        // Not commander's required options: those would be asked of `replay list` too.
        if (options.route === undefined || options.since === undefined) throw new CliError(`${options.route === undefined ? "--route" : "--since"} is required to start a replay (streamkeeper replay --route <name> --since <t>); replay list, status and cancel follow the replays`, 2);
        const env = loadClientConfig();
        const body = {
          route: options.route,
          since: parseCliTime("--since", options.since),
          ...(options.until ? { until: parseCliTime("--until", options.until) } : {}),
          ...(options.type ? { type: options.type } : {}),
          ...(options.entity ? { entity: options.entity } : {}),
          ...(options.stream ? { stream: options.stream } : {}),
          ...(options.outcome ? { outcome: options.outcome } : {}),
          ...(options.rate ? { rate: Number(options.rate) } : {}),
          dryRun: Boolean(options.dryRun),
        };
        const started = (await askArchive(env, "POST", "/admin/replays", body)) as { replayId?: string; matched: number; erased: number };
        const erasedNote = started.erased > 0 ? `; ${started.erased} of them had their payload erased and are skipped, never sent` : "";
        if (options.dryRun) {
          process.stdout.write(options.json ? `${JSON.stringify({ matched: started.matched, erased: started.erased, dryRun: true })}\n` : `${started.matched} archived events match${erasedNote}; nothing was sent (--dry-run)\n`);
          return;
        }
        if (!options.wait) {
          process.stdout.write(options.json ? `${JSON.stringify(started)}\n` : `replay ${started.replayId} started: ${started.matched} events to ${options.route}${erasedNote}; follow it with streamkeeper replay status ${started.replayId}\n`);
          return;
        }
        const tty = process.stdout.isTTY;
        let status: ReplayStatus;
        // A window reaching the last seconds waits that long for the archive by design
        // (replay-runner.ts); a wait longer than waitWorthSayingMs is said once.
        let waitingSince: number | undefined;
        let waitSaid = false;
        for (;;) {
          status = (await askArchive(env, "GET", `/admin/replays/${started.replayId}`)) as ReplayStatus;
          const finished = status.state !== "running" && status.delivered + status.failed >= status.sent;
          const waiting = status.waitingForArchiveSince !== undefined;
          waitingSince = waiting ? (waitingSince ?? Date.now()) : undefined;
          if (tty && !options.json) process.stdout.write(`\rreplay ${status.replayId}: ${status.sent}/${status.matched - status.skipped - status.filtered} sent, ${status.delivered} delivered, ${status.failed} failed${waiting ? ", waiting for the archive" : ""}   `);
          else if (waitingSince !== undefined && Date.now() - waitingSince >= waitWorthSayingMs && !waitSaid && !options.json) {
            process.stdout.write(`replay ${status.replayId} waits for the archive to catch up with its window (events still in its outbox: archive_lag_seconds); it goes on once they are in\n`);
            waitSaid = true;
          }
          if (finished || status.state === "cancelled" || status.state === "failed") break;
          await new Promise((ok) => setTimeout(ok, 500));
        }
        if (tty && !options.json) process.stdout.write("\n");
        if (options.json) process.stdout.write(`${JSON.stringify(status)}\n`);
        else {
          process.stdout.write(`replay ${status.replayId} ${status.state}: ${status.matched} matched, ${status.sent} sent, ${status.delivered} delivered, ${status.failed} failed\n`);
          if (status.skipped > 0) process.stdout.write(`skipped ${status.skipped} events whose payload was erased (events forget): not sent\n`);
          if (status.filtered > 0) process.stdout.write(`filtered ${status.filtered} events the route leaves out now (its match, filter or testEvents): not sent\n`);
        }
        return status.state === "done" && status.failed === 0 ? 0 : 1;
      }),
    );
  registerReplayFollowCommands(replay);
}

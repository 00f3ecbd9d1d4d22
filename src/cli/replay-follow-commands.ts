import type { Command } from "commander";
import { loadClientConfig } from "../config/config.js";
import { askArchive } from "./ask-archive.js";
import { formatTable } from "./format-table.js";
import { runAction } from "./run-action.js";
import type { ReplayStatus } from "../archive/replays.js";

/** A replay as `GET /admin/replays` and `GET /admin/replays/:id` answer it (README.md#the-archive-search-timelines-replay-erasure). */
export type { ReplayStatus } from "../archive/replays.js";

/** `--json` is the `replay` command's own option: commander gives it to the parent wherever it stands. */
const json = (command: Command) => Boolean(command.optsWithGlobals().json);

const notFound = (replayId: string) => `no replay ${replayId}: streamkeeper replay list shows every replay's id`;

/** One replay in one line: its id, route, state and counts. */
export function replayLine(status: ReplayStatus): string {
  const waiting = status.waitingForArchiveSince ? ", waiting for the archive" : "";
  const skipped = status.skipped > 0 ? `, ${status.skipped} skipped (erased)` : "";
  return `replay ${status.replayId} to ${status.route} ${status.state}${waiting}: ${status.matched} matched, ${status.sent} sent, ${status.delivered} delivered, ${status.failed} failed${skipped}`;
}

/**
 * `streamkeeper replay list|status <replay-id>|cancel <replay-id> [--json]`
 * (README.md#the-archive-search-timelines-replay-erasure): every replay, whoever started it
 * (`GET /admin/replays`), one replay's state and counts, and the cancel of a running one.
 */
export function registerReplayFollowCommands(replay: Command): void {
  replay
    .command("list")
    .description("every replay, newest first: id, route, state, counts, when it started")
    .action(
      runAction(async (_options: object, command: Command) => {
        const { replays } = (await askArchive(loadClientConfig(), "GET", "/admin/replays")) as { replays: ReplayStatus[] };
        if (json(command)) return void process.stdout.write(replays.map((status) => `${JSON.stringify(status)}\n`).join(""));
        if (replays.length === 0) return void process.stdout.write("no replay yet: streamkeeper replay --route <name> --since <t> starts one\n");
        const rows = replays.map((status) => [status.replayId, status.route, status.state, String(status.matched), String(status.sent), String(status.delivered), String(status.failed), status.startedAt]);
        process.stdout.write(formatTable(["REPLAY", "ROUTE", "STATE", "MATCHED", "SENT", "DELIVERED", "FAILED", "STARTED"], rows));
      }),
    );

  // status reads a replay, cancel stops it: both answer with its state and counts.
  for (const [name, method, description] of [
    ["status", "GET", "one replay's state and counts"],
    ["cancel", "DELETE", "stop a running replay (what it queued already is still delivered)"],
  ] as const) {
    replay
      .command(`${name} <replay-id>`)
      .description(description)
      .action(
        runAction(async (replayId: string, _options: object, command: Command) => {
          const status = (await askArchive(loadClientConfig(), method, `/admin/replays/${encodeURIComponent(replayId)}`, undefined, notFound(replayId))) as ReplayStatus;
          process.stdout.write(json(command) ? `${JSON.stringify(status)}\n` : `${replayLine(status)}\n`);
        }),
      );
  }
}

import type { ArchivedEventDescription } from "../admin/describe-archived-event.js";
import type { EventDescription } from "../admin/describe-event.js";
import type { ClientEnv } from "../config/config.js";
import { CliError } from "./cli-error.js";
import { createServiceClient, noService } from "./service-client.js";

/**
 * `streamkeeper events show <event-id>`: GET /admin/events/:eventId as readable lines (the
 * archive's timeline when it has one, else what Redis remembers), or the object as one
 * JSON line. An id the service does not know fails (exit 1) saying where ids are found.
 */
export async function showEvent(env: ClientEnv, eventId: string, json: boolean): Promise<void> {
  if (eventId.trim() === "") throw new CliError("<event-id> is empty: give an event id (streamkeeper events search lists them)", 2);
  const service = createServiceClient(env);
  const answer = await service.ask("GET", `/admin/events/${encodeURIComponent(eventId)}`, { timeoutMs: 30_000 });
  if (!answer.reachable) throw noService(answer);
  if (answer.status === 404 && typeof (answer.body as { detail?: unknown } | undefined)?.detail === "string") {
    throw new CliError(`no event ${eventId} is known to the service at ${answer.url} (neither its archive nor the ids it remembers for DEDUPE_TTL_SECONDS): find ids with streamkeeper events search`);
  }
  if (answer.status !== 200) throw service.refusal(answer);
  const event = answer.body as ArchivedEventDescription;
  if (json) return void process.stdout.write(`${JSON.stringify(event)}\n`);
  process.stdout.write(eventLines(event).join("\n") + "\n");
  if (event.timelineUnavailable) process.stderr.write(`note: no timeline: ${event.timelineUnavailable}\n`);
}

/** The event, one fact a line: the archive's timeline when there is one, else the ledger's arrival and each route's job. */
function eventLines(event: ArchivedEventDescription): string[] {
  const lines = [`event ${event.eventId}  ${event.type}`];
  const { timeline } = event;
  if (timeline) {
    const { arrival } = timeline;
    const details = [arrival.stream && `stream ${arrival.stream}`, arrival.entity && `entity ${arrival.entity}`, arrival.failedFirst && "the tenant had failed it first"].filter(Boolean);
    lines.push(`arrived ${arrival.at} by ${arrival.origin}${details.length ? ` (${details.join(", ")})` : ""}`);
    if (timeline.erasedAt) lines.push(`payload erased ${timeline.erasedAt}`);
    if (timeline.routes.length === 0) lines.push("no route matched it");
    for (const route of timeline.routes) {
      lines.push(`route ${route.route}: ${route.outcome}`);
      for (const attempt of route.attempts) {
        const result = [attempt.status === undefined ? undefined : `status ${attempt.status}`, attempt.error].filter(Boolean).join(" ");
        lines.push(`  ${attempt.at}  ${attempt.outcome}${result ? `  ${result}` : ""}${attempt.replayId ? `  (replay ${attempt.replayId})` : ""}`);
      }
    }
    return lines;
  }
  if (!("arrival" in event)) return lines;
  const known = event as EventDescription;
  const { arrival } = known;
  const repeats = [arrival.streamId && `stream ${arrival.streamId}`, arrival.duplicates > 0 && `${arrival.duplicates} duplicate(s) answered`].filter(Boolean);
  lines.push(`arrived ${arrival.receivedAt} by ${arrival.origin}${repeats.length ? ` (${repeats.join(", ")})` : ""}`);
  if (known.unrouted) lines.push("no route matched it");
  for (const route of known.routes) {
    const facts = [`${route.attempts} attempt(s)`, route.deliveredAt && `delivered ${route.deliveredAt}`, route.lastError && `last error: ${route.lastError}`].filter(Boolean);
    lines.push(`route ${route.route}: ${route.state} (${facts.join(", ")})`);
  }
  return lines;
}

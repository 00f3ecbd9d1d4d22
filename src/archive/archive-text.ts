import { isWellFormed } from "../events/is-well-formed.js";

/**
 * Text as the archive keeps it. PostgreSQL text holds no NUL, and a lone surrogate cannot
 * be sent to it as UTF-8 (it would arrive as U+FFFD, another id) nor as JSON (jsonb refuses
 * `\ud800`); the webhook still acknowledges such events (a NUL is valid JSON, and an id's
 * lone surrogate is refused only where the CloudEvent checks it), so the archive keeps
 * them encoded: the marker, then the string as JSON (which escapes both as `\u....`).
 * A string that begins with the marker itself is encoded too, so two distinct strings
 * never share a stored form, and a search by an exact id encodes it the same way.
 */
const marker = "~sk:";

/** The stored form of `text`: itself, unless Postgres would refuse or change it (above). */
export function toArchiveText(text: string): string {
  return text.includes("\0") || !isWellFormed(text) || text.startsWith(marker) ? marker + JSON.stringify(text) : text;
}

/** `toArchiveText` undone, for what the archive answers. */
export function fromArchiveText(stored: string): string {
  if (!stored.startsWith(marker)) return stored;
  try {
    return JSON.parse(stored.slice(marker.length)) as string;
  } catch {
    return stored; // written by hand, not by the archive: shown as it is
  }
}

/** toArchiveText for a value that may be absent. */
export function toArchiveTextOrNull(text: string | undefined | null): string | null {
  return text === undefined || text === null ? null : toArchiveText(text);
}

import { createParser, type EventSourceMessage } from "eventsource-parser";

/** A message of the Events API; `oversize` when it passed the bound (its data dropped, `data` empty). */
export interface EventLogMessage extends EventSourceMessage {
  oversize?: {
    /** Its size in bytes, every line of it (field names and line ends included). */
    bytes: number;
    /** Its first bytes as text (at most `headBytes`): what it was, for whoever reads the dead letter. */
    head: string;
  };
}

export interface BoundedSseOptions {
  /** A message larger than this (all its lines) is not held: its data is dropped as it comes and it is passed on as `oversize`. */
  maxMessageBytes: number;
  /** How much of an oversize message's start is kept. @defaultValue 4096 */
  headBytes?: number;
  onComment?(comment: string): void;
  onRetry?(ms: number): void;
  /** A message just passed `maxMessageBytes` (said once per message: it may never end). */
  onOversize?(): void;
}

/** An `id:` or `event:` line of an oversize message is still read up to this length (its offset passes with it). */
const fieldLineBytes = 1024;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Server-Sent Events bytes to messages, never holding more than `maxMessageBytes` of one
 * message (a message of any size, or a line that never ends, costs at most that much). The
 * lines are split here, by bytes, so the bound is exact; the fields of each bounded line are
 * eventsource-parser's to read (docs/operating.md, "Why eventsource-parser"). A message past
 * the bound keeps only its first bytes, its `id:` and its `event:`, and is passed on in its
 * place in the stream as `oversize`, so its offset is kept in order like any other's.
 */
export function createBoundedSseStream(options: BoundedSseOptions): TransformStream<Uint8Array, EventLogMessage> {
  const headBytes = options.headBytes ?? 4096;
  let emit: (message: EventLogMessage) => void = () => undefined;
  const parser = createParser({ onEvent: (message) => emit(message), onComment: options.onComment, onRetry: options.onRetry });
  /** The current line's bytes; dropped (and `lineDropped`) once they pass what may be kept of it. */
  let line: Uint8Array[] = [];
  let lineBytes = 0;
  let lineDropped = false;
  /** The current message: its bytes so far, its first bytes, and whether it passed the bound. */
  let messageBytes = 0;
  let head: Uint8Array[] = [];
  let headKept = 0;
  let oversize = false;
  let id: string | undefined;
  let event: string | undefined;
  /** The last chunk ended with CR: an LF first in the next one ends no second line. */
  let afterCr = false;

  const keepHead = (bytes: Uint8Array) => {
    if (headKept >= headBytes) return;
    const part = bytes.subarray(0, headBytes - headKept);
    head.push(part.slice());
    headKept += part.length;
  };

  const append = (bytes: Uint8Array) => {
    if (bytes.length === 0) return;
    keepHead(bytes);
    messageBytes += bytes.length;
    lineBytes += bytes.length;
    if (!oversize && messageBytes > options.maxMessageBytes) {
      oversize = true;
      parser.reset();
      options.onOversize?.();
    }
    if (lineDropped) return;
    if (oversize && lineBytes > fieldLineBytes) {
      line = [];
      lineDropped = true;
      return;
    }
    line.push(bytes.slice());
  };

  const endLine = () => {
    const text = lineDropped ? undefined : Buffer.concat(line).toString("utf8");
    const empty = lineBytes === 0;
    line = [];
    lineBytes = 0;
    lineDropped = false;
    messageBytes += 1;
    keepHead(Uint8Array.of(LF));
    if (empty) return endMessage();
    // Read here too: an oversize message passes on with the id and type it had before it grew.
    const field = text === undefined ? undefined : /^(id|event):\x20?(.*)$/s.exec(text);
    if (field?.[1] === "id" && !field[2]!.includes("\0")) id = field[2];
    if (field?.[1] === "event") event = field[2] || undefined;
    if (!oversize) parser.feed(`${text}\n`);
  };

  const endMessage = () => {
    if (oversize) emit({ id, event, data: "", oversize: { bytes: messageBytes, head: Buffer.concat(head).toString("utf8") } });
    else parser.feed("\n");
    messageBytes = 0;
    head = [];
    headKept = 0;
    oversize = false;
    id = undefined;
    event = undefined;
  };

  return new TransformStream<Uint8Array, EventLogMessage>({
    start(controller) {
      emit = (message) => controller.enqueue(message);
    },
    transform(chunk) {
      let at = afterCr && chunk[0] === LF ? 1 : 0;
      afterCr = false;
      let cr = chunk.indexOf(CR, at);
      while (at < chunk.length) {
        if (cr !== -1 && cr < at) cr = chunk.indexOf(CR, at);
        const lf = chunk.indexOf(LF, at);
        const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(lf, cr);
        if (end === -1) {
          append(chunk.subarray(at));
          break;
        }
        append(chunk.subarray(at, end));
        endLine();
        at = end + 1;
        if (chunk[end] === CR) {
          if (at === chunk.length) afterCr = true;
          else if (chunk[at] === LF) at += 1;
        }
      }
    },
  });
}

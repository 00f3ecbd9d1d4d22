import { describe, expect, it } from "vitest";
import { createBoundedSseStream, type EventLogMessage } from "../../../src/tenant/bounded-sse-stream.js";

/** Runs `chunks` (text, split where the test says) through the stream; the messages and comments out. */
async function read(chunks: string[], maxMessageBytes = 64): Promise<{ messages: EventLogMessage[]; comments: string[]; retries: number[]; oversize: number }> {
  const comments: string[] = [];
  const retries: number[] = [];
  let oversize = 0;
  const stream = createBoundedSseStream({ maxMessageBytes, headBytes: 16, onComment: (text) => comments.push(text), onRetry: (ms) => retries.push(ms), onOversize: () => (oversize += 1) });
  const writer = stream.writable.getWriter();
  const messages: EventLogMessage[] = [];
  const reading = (async () => {
    for await (const message of stream.readable as unknown as AsyncIterable<EventLogMessage>) messages.push(message);
  })();
  for (const chunk of chunks) await writer.write(new TextEncoder().encode(chunk));
  await writer.close();
  await reading;
  return { messages, comments, retries, oversize };
}

describe("createBoundedSseStream", () => {
  it("when messages come split anywhere, with LF, CRLF (split between chunks) or CR line ends, then each is read as eventsource-parser reads it", async () => {
    const { messages, comments, retries } = await read([":connected\n\nretry: 1000\n\nevent: user.created\r", "\nid: o1\rdata: {\"a\":", "1}\r\n\r\n", "data: x\ndata: y\n\n: heartbeat\n\n"]);
    expect(messages).toEqual([
      { id: "o1", event: "user.created", data: '{"a":1}' },
      { id: undefined, event: undefined, data: "x\ny" },
    ]);
    expect(comments).toEqual(["connected", "heartbeat"]);
    expect(retries).toEqual([1000]);
  });

  it("when a message passes the bound, then it comes in its place as oversize with its size, first bytes, id (also one sent after its data) and type; the next message is read whole", async () => {
    const data = "x".repeat(200);
    const { messages, oversize } = await read(["event: user.created\ndata: ", data.slice(0, 100), data.slice(100), "\nid: o2\n\n", "id: o3\ndata: small\n\n"]);
    expect(oversize).toBe(1);
    const size = "event: user.created\n".length + `data: ${data}\n`.length + "id: o2\n".length + 1;
    expect(messages).toEqual([
      { id: "o2", event: "user.created", data: "", oversize: { bytes: size, head: "event: user.crea" } },
      { id: "o3", event: undefined, data: "small" },
    ]);
  });

  it("when a message of exactly the bound comes, then it is read whole", async () => {
    const line = `data: ${"y".repeat(64 - "data: ".length - 2)}\n`;
    const { messages } = await read([`${line}\n`]);
    expect(messages.map((message) => message.data)).toEqual(["y".repeat(56)]);
  });
});
